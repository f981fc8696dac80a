#include "summary_writer/event_file_reader.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "summary_writer/record.h"

namespace overseer {

absl::StatusOr<std::vector<Event>> ReadEventFile(FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RETURN(const std::string contents, fs->ReadFile(path));
  RecordReader reader(contents);
  std::vector<Event> events;
  std::string record;
  while (true) {
    const uint64_t offset = reader.offset();
    const absl::Status s = reader.ReadRecord(&record);
    if (absl::IsOutOfRange(s)) break;
    RETURN_IF_ERROR(Annotate(s, absl::StrCat(path, ": ")));
    Event event;
    if (!event.ParseFromString(record)) {
      return absl::DataLossError(
          absl::StrCat(path, ": record at ", offset, " is not a valid Event"));
    }
    events.push_back(std::move(event));
  }
  return events;
}

absl::StatusOr<std::vector<std::string>> ListEventFiles(FileSystem* fs, const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  std::vector<std::string> event_files;
  for (std::string& name : names) {
    if (absl::StrContains(name, "tfevents")) event_files.push_back(std::move(name));
  }
  return event_files;
}

}  // namespace overseer
