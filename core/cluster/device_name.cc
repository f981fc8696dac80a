#include "core/cluster/device_name.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace overseer {
namespace {

absl::Status Bad(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed device name '", name, "': ", why,
                   " (expected e.g. /job:ps/replica:0/task:1/device:CPU:0)"));
}

bool ParseIndex(absl::string_view s, int* out) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(s, out);
}

bool IsValidJob(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<DeviceName> DeviceName::Parse(absl::string_view name) {
  DeviceName d;
  if (name.empty()) return d;
  if (name[0] != '/') return Bad(name, "it must start with '/'");
  std::vector<absl::string_view> parts = absl::StrSplit(name.substr(1), '/');
  bool seen_job = false, seen_device = false;
  for (absl::string_view part : parts) {
    if (part.empty()) return Bad(name, "empty component");
    if (absl::ConsumePrefix(&part, "job:")) {
      if (seen_job) return Bad(name, "job given twice");
      if (!IsValidJob(part)) return Bad(name, absl::StrCat("bad job name '", part, "'"));
      d.job = std::string(part);
      seen_job = true;
    } else if (absl::ConsumePrefix(&part, "replica:")) {
      if (d.has_replica) return Bad(name, "replica given twice");
      if (!ParseIndex(part, &d.replica)) {
        return Bad(name, absl::StrCat("bad replica '", part, "'"));
      }
      d.has_replica = true;
    } else if (absl::ConsumePrefix(&part, "task:")) {
      if (d.has_task) return Bad(name, "task given twice");
      if (!ParseIndex(part, &d.task)) return Bad(name, absl::StrCat("bad task '", part, "'"));
      d.has_task = true;
    } else {
      // "device:CPU:0", "device:CPU", "cpu:0" (legacy).
      if (seen_device) return Bad(name, "device given twice");
      seen_device = true;
      const bool legacy = !absl::ConsumePrefix(&part, "device:");
      std::vector<absl::string_view> tid = absl::StrSplit(part, ':');
      if (tid.size() > 2 || tid[0].empty()) {
        return Bad(name, absl::StrCat("unknown component '", part, "'"));
      }
      std::string type(tid[0]);
      if (legacy) {
        if (tid.size() != 2) return Bad(name, absl::StrCat("unknown component '", part, "'"));
        absl::AsciiStrToUpper(&type);
      }
      if (!IsValidJob(type)) return Bad(name, absl::StrCat("bad device type '", type, "'"));
      d.type = type;
      if (tid.size() == 2 && tid[1] != "*") {
        if (!ParseIndex(tid[1], &d.id)) {
          return Bad(name, absl::StrCat("bad device id '", tid[1], "'"));
        }
        d.has_id = true;
      }
    }
  }
  return d;
}

std::string DeviceName::ToString() const {
  std::string s;
  if (!job.empty()) absl::StrAppend(&s, "/job:", job);
  if (has_replica) absl::StrAppend(&s, "/replica:", replica);
  if (has_task) absl::StrAppend(&s, "/task:", task);
  if (!type.empty()) {
    absl::StrAppend(&s, "/device:", type);
    if (has_id) absl::StrAppend(&s, ":", id);
  }
  return s;
}

std::string DeviceName::TaskName() const {
  return absl::StrCat("/job:", job, "/replica:", has_replica ? replica : 0, "/task:", task);
}

bool DeviceName::IsFullySpecified() const {
  return !job.empty() && has_task && !type.empty() && has_id;
}

bool DeviceName::Matches(const DeviceName& o) const {
  if (!job.empty() && job != o.job) return false;
  if (has_replica && (!o.has_replica || replica != o.replica)) return false;
  if (has_task && (!o.has_task || task != o.task)) return false;
  if (!type.empty() && type != o.type) return false;
  if (has_id && (!o.has_id || id != o.id)) return false;
  return true;
}

absl::Status DeviceName::MergeFrom(const DeviceName& o) {
  auto conflict = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("device names '", ToString(), "' and '",
                                                   o.ToString(), "' conflict in their ", what));
  };
  if (!o.job.empty()) {
    if (!job.empty() && job != o.job) return conflict("job");
  }
  if (o.has_replica && has_replica && replica != o.replica) return conflict("replica");
  if (o.has_task && has_task && task != o.task) return conflict("task");
  if (!o.type.empty() && !type.empty() && type != o.type) return conflict("device type");
  if (o.has_id && has_id && id != o.id) return conflict("device id");
  if (!o.job.empty()) job = o.job;
  if (o.has_replica) {
    has_replica = true;
    replica = o.replica;
  }
  if (o.has_task) {
    has_task = true;
    task = o.task;
  }
  if (!o.type.empty()) type = o.type;
  if (o.has_id) {
    has_id = true;
    id = o.id;
  }
  return absl::OkStatus();
}

bool DeviceName::operator==(const DeviceName& o) const {
  return job == o.job && has_replica == o.has_replica && (!has_replica || replica == o.replica) &&
         has_task == o.has_task && (!has_task || task == o.task) && type == o.type &&
         has_id == o.has_id && (!has_id || id == o.id);
}

std::string FullDeviceName(absl::string_view job, int task, absl::string_view type, int id) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task, "/device:", type, ":", id);
}

}  // namespace overseer
