#include "checkpoint_store/state_file.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "google/protobuf/text_format.h"

namespace overseer {

absl::StatusOr<std::optional<CheckpointState>> ReadStateFile(FileSystem* fs,
                                                             const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kStateFilename);
  absl::StatusOr<std::string> text = fs->ReadFile(path);
  if (absl::IsNotFound(text.status())) return std::optional<CheckpointState>();
  if (!text.ok()) return text.status();
  CheckpointState state;
  if (!google::protobuf::TextFormat::ParseFromString(*text, &state)) {
    return absl::DataLossError(absl::StrCat("checkpoint state file ", path, " does not parse"));
  }
  return std::optional<CheckpointState>(std::move(state));
}

absl::Status WriteStateFile(FileSystem* fs, const std::string& dir, const CheckpointState& state,
                            const std::string& temp_suffix) {
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(state, &text)) {
    return absl::InternalError("cannot print the checkpoint state");
  }
  const std::string temp = absl::StrCat(dir, "/", kStateTempPrefix, temp_suffix);
  {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(temp));
    RETURN_IF_ERROR(file->Append(text));
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(file->Close());
  }
  RETURN_IF_ERROR(fs->RenameFile(temp, absl::StrCat(dir, "/", kStateFilename)));
  return fs->SyncDir(dir);
}

}  // namespace overseer
