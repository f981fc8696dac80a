#ifndef OVERSEER_SUMMARY_WRITER_EVENT_FILE_READER_H_
#define OVERSEER_SUMMARY_WRITER_EVENT_FILE_READER_H_

// Reading event files back, checking every CRC: for tests, tools and the benchmark.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/io/file_system.h"
#include "proto/event.pb.h"

namespace overseer {

// Every event of the file at `path`, in order. DATA_LOSS naming the file and offset if
// a record is truncated, fails a CRC check or does not parse as an Event; the error of
// the file system if the file cannot be read.
absl::StatusOr<std::vector<Event>> ReadEventFile(FileSystem* fs, const std::string& path);

// The names of the event files (basename contains "tfevents") directly in `dir`, in
// the order TensorBoard reads them (lexicographic).
absl::StatusOr<std::vector<std::string>> ListEventFiles(FileSystem* fs, const std::string& dir);

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_EVENT_FILE_READER_H_
