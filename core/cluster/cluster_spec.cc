#include "core/cluster/cluster_spec.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace overseer {
namespace {

bool IsValidJobName(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string TaskId::Name() const { return absl::StrCat("/job:", job, "/replica:0/task:", index); }

absl::Status ValidateAddress(absl::string_view address) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad task address '", address, "': ", why, " (expected host:port)"));
  };
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return bad("no ':port'");
  absl::string_view host = address.substr(0, colon);
  absl::string_view port = address.substr(colon + 1);
  if (host.empty()) return bad("empty host");
  if (host.front() == '[' ? host.back() != ']' : host.find(':') != absl::string_view::npos) {
    return bad("IPv6 hosts must be in brackets");
  }
  for (char c : host) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == ',' || c == ';' || c == '=') {
      return bad("bad character in host");
    }
  }
  int p = 0;
  if (port.empty() ||
      !std::all_of(port.begin(), port.end(), [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(port, &p) || p < 1 || p > 65535) {
    return bad("port must be a number in 1..65535");
  }
  return absl::OkStatus();
}

absl::Status ClusterSpec::AddJob(const std::string& job, std::vector<std::string> addresses) {
  if (!IsValidJobName(job)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad job name '", job, "' in cluster spec (letters, digits, '_' and '-' only)"));
  }
  if (jobs_.count(job)) {
    return absl::InvalidArgumentError(absl::StrCat("job '", job, "' given twice in cluster spec"));
  }
  if (addresses.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("job '", job, "' has no tasks"));
  }
  for (const std::string& a : addresses) {
    absl::Status s = ValidateAddress(a);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("job '", job, "': ", s.message()));
    }
  }
  jobs_[job] = std::move(addresses);
  return absl::OkStatus();
}

absl::StatusOr<ClusterSpec> ClusterSpec::Parse(absl::string_view spec) {
  ClusterSpec cs;
  for (absl::string_view item : absl::StrSplit(spec, ';', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster spec item '", item, "' has no '=' (expected job=host:port,host:port)"));
    }
    std::string job(absl::StripAsciiWhitespace(item.substr(0, eq)));
    std::vector<std::string> addresses;
    for (absl::string_view a : absl::StrSplit(item.substr(eq + 1), ',')) {
      addresses.emplace_back(absl::StripAsciiWhitespace(a));
    }
    if (addresses.size() == 1 && addresses[0].empty()) addresses.clear();
    RETURN_IF_ERROR(cs.AddJob(job, std::move(addresses)));
  }
  if (cs.empty()) {
    return absl::InvalidArgumentError(
        "empty cluster spec (expected e.g. ps=host:port;worker=host:port)");
  }
  return cs;
}

std::string ClusterSpec::ToString() const {
  std::vector<std::string> items;
  for (const auto& [job, addrs] : jobs_) {
    items.push_back(absl::StrCat(job, "=", absl::StrJoin(addrs, ",")));
  }
  return absl::StrJoin(items, ";");
}

bool ClusterSpec::HasJob(absl::string_view job) const {
  return jobs_.find(std::string(job)) != jobs_.end();
}

int ClusterSpec::NumTasks(absl::string_view job) const {
  auto it = jobs_.find(std::string(job));
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<TaskId> ClusterSpec::Tasks() const {
  std::vector<TaskId> out;
  for (const auto& [job, addrs] : jobs_) {
    for (int i = 0; i < static_cast<int>(addrs.size()); ++i) out.push_back({job, i});
  }
  return out;
}

absl::StatusOr<std::string> ClusterSpec::TaskAddress(absl::string_view job, int index) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end() || index < 0 || index >= static_cast<int>(it->second.size())) {
    std::vector<std::string> known;
    for (const auto& [j, a] : jobs_) known.push_back(absl::StrCat(j, " (", a.size(), " tasks)"));
    return absl::NotFoundError(absl::StrCat("no task /job:", job, "/task:", index,
                                            " in the cluster; jobs: ", absl::StrJoin(known, ", ")));
  }
  return it->second[index];
}

absl::StatusOr<TfConfig> ParseTfConfig(absl::string_view json) {
  using google::protobuf::Struct;
  using google::protobuf::Value;
  Struct root;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(json), &root);
  if (!st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG is not a JSON object: ", std::string(st.message().data(), st.message().size())));
  }
  TfConfig config;
  auto cluster_it = root.fields().find("cluster");
  if (cluster_it == root.fields().end()) {
    return absl::InvalidArgumentError("TF_CONFIG has no \"cluster\" field");
  }
  if (cluster_it->second.kind_case() != Value::kStructValue) {
    return absl::InvalidArgumentError(
        "TF_CONFIG \"cluster\" must be an object of job name -> list of \"host:port\"");
  }
  // Struct fields are a map with unspecified order; sort for determinism of errors.
  std::map<std::string, const Value*> jobs;
  for (const auto& [job, v] : cluster_it->second.struct_value().fields()) jobs[job] = &v;
  for (const auto& [job, v] : jobs) {
    if (v->kind_case() != Value::kListValue) {
      return absl::InvalidArgumentError(
          absl::StrCat("TF_CONFIG cluster.", job, " must be a list of \"host:port\" strings"));
    }
    std::vector<std::string> addrs;
    for (int i = 0; i < v->list_value().values_size(); ++i) {
      const Value& a = v->list_value().values(i);
      if (a.kind_case() != Value::kStringValue) {
        return absl::InvalidArgumentError(
            absl::StrCat("TF_CONFIG cluster.", job, "[", i, "] must be a \"host:port\" string"));
      }
      addrs.push_back(a.string_value());
    }
    absl::Status s = config.cluster.AddJob(job, std::move(addrs));
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG: ", s.message()));
  }
  if (config.cluster.empty()) return absl::InvalidArgumentError("TF_CONFIG cluster is empty");
  auto task_it = root.fields().find("task");
  if (task_it == root.fields().end()) return config;
  if (task_it->second.kind_case() != Value::kStructValue) {
    return absl::InvalidArgumentError(
        "TF_CONFIG \"task\" must be an object {\"type\": ..., \"index\": ...}");
  }
  const auto& task = task_it->second.struct_value().fields();
  auto type_it = task.find("type");
  if (type_it == task.end() || type_it->second.kind_case() != Value::kStringValue) {
    return absl::InvalidArgumentError("TF_CONFIG task.type must be a string job name");
  }
  config.task_type = type_it->second.string_value();
  auto index_it = task.find("index");
  if (index_it != task.end()) {
    const Value& idx = index_it->second;
    double d = 0;
    if (idx.kind_case() == Value::kNumberValue) {
      d = idx.number_value();
    } else if (idx.kind_case() != Value::kStringValue ||
               !absl::SimpleAtod(idx.string_value(), &d)) {
      return absl::InvalidArgumentError("TF_CONFIG task.index must be a non-negative integer");
    }
    if (d < 0 || d != std::floor(d) || d > 1e9) {
      return absl::InvalidArgumentError(
          absl::StrCat("TF_CONFIG task.index must be a non-negative integer, got ", d));
    }
    config.task_index = static_cast<int>(d);
  }
  if (config.task_index >= config.cluster.NumTasks(config.task_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG task {type: ", config.task_type, ", index: ", config.task_index,
                     "} is not in the cluster (", config.cluster.ToString(), ")"));
  }
  return config;
}

}  // namespace overseer
