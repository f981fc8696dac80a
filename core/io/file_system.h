#ifndef OVERSEER_CORE_IO_FILE_SYSTEM_H_
#define OVERSEER_CORE_IO_FILE_SYSTEM_H_

// The file operations the event writer needs, behind an interface so that tests can
// inject failures (fault_injecting_file_system.h). Paths are plain POSIX paths.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace overseer {

// A file open for appending. Not thread-safe; the owner synchronises.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Hands all of `data` to the operating system (readers see it; a crash of this
  // process does not lose it, a crash of the machine may). Errors name the file.
  virtual absl::Status Append(absl::string_view data) = 0;
  // Makes everything appended so far durable (fsync).
  virtual absl::Status Sync() = 0;
  // Closes the file; further calls fail with FAILED_PRECONDITION.
  virtual absl::Status Close() = 0;
};

// A file open for reading at offsets. Thread-safe.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to `n` bytes at `offset` into `scratch` and returns the bytes read
  // (fewer than `n` only at the end of the file). Errors name the file.
  virtual absl::StatusOr<absl::string_view> Read(uint64_t offset, size_t n,
                                                 char* scratch) const = 0;
  // A hint that bytes [offset, offset + n) will be read soon: the file system may start
  // reading them from the disk now (without waiting) so that a sequential reader of
  // small pieces keeps many requests in flight. Never fails; the default does nothing.
  virtual void Prefetch(uint64_t /*offset*/, size_t /*n*/) const {}
};

// Thread-safe.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates `path`, which must not exist (ALREADY_EXISTS otherwise; concurrent
  // creators never share a file), and makes its directory entry durable.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) = 0;
  // Creates `path` and its missing parents; OK if it exists as a directory.
  virtual absl::Status CreateDirs(const std::string& path) = 0;
  // The names (not paths) of the entries of directory `path`, sorted; NOT_FOUND if it
  // does not exist.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // The whole contents of `path`; NOT_FOUND if it does not exist.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;

  // Opens `path` for reading at offsets; NOT_FOUND if it does not exist.
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;
  // The size of `path` in bytes; NOT_FOUND if it does not exist.
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  // OK if `path` exists, NOT_FOUND if not, other errors if it cannot be told.
  virtual absl::Status FileExists(const std::string& path) = 0;
  // Atomically renames `from` to `to`, replacing `to` if it exists (POSIX rename).
  // The new directory entry is durable only after SyncDir.
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Removes the file `path`; NOT_FOUND if it does not exist.
  virtual absl::Status DeleteFile(const std::string& path) = 0;
  // Makes the entries of directory `path` (creations, renames, deletions) durable.
  virtual absl::Status SyncDir(const std::string& path) = 0;
  // Whether `path` itself is a directory: false for a file and for a symbolic link,
  // whatever it points to (lstat); NOT_FOUND if nothing is there.
  virtual absl::StatusOr<bool> IsDirectory(const std::string& path) = 0;
  // The absolute path of `path` with every symbolic link, "." and ".." resolved
  // (realpath); NOT_FOUND if it does not exist.
  virtual absl::StatusOr<std::string> RealPath(const std::string& path) = 0;

  // The local file system. Never null; never deleted.
  static FileSystem* Posix();
};

// `path` without its last component: "/a/b" -> "/a", "/a" -> "/", "a" -> ".".
std::string Dirname(const std::string& path);

}  // namespace overseer

#endif  // OVERSEER_CORE_IO_FILE_SYSTEM_H_
