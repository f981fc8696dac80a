#ifndef OVERSEER_CHECKPOINT_STORE_STATE_FILE_H_
#define OVERSEER_CHECKPOINT_STORE_STATE_FILE_H_

// The `checkpoint` state file of a checkpoint directory (FORMATS.md 7): CheckpointState
// in protobuf text format, with paths relative to the directory.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/io/file_system.h"
#include "proto/tensor_bundle.pb.h"

namespace overseer {

inline constexpr char kStateFilename[] = "checkpoint";
// Temp state files are "checkpoint.tmp<suffix>".
inline constexpr char kStateTempPrefix[] = "checkpoint.tmp";

// The state of directory `dir`; nullopt if it has no state file. DATA_LOSS naming the
// file if it does not parse.
absl::StatusOr<std::optional<CheckpointState>> ReadStateFile(FileSystem* fs,
                                                             const std::string& dir);

// Replaces the state file of `dir` atomically and durably: writes
// "checkpoint.tmp<temp_suffix>", fsyncs it, renames it over "checkpoint" and fsyncs
// the directory. On failure the old state file is intact (the temp file may remain).
absl::Status WriteStateFile(FileSystem* fs, const std::string& dir, const CheckpointState& state,
                            const std::string& temp_suffix);

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_STATE_FILE_H_
