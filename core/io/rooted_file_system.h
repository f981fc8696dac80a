#ifndef OVERSEER_CORE_IO_ROOTED_FILE_SYSTEM_H_
#define OVERSEER_CORE_IO_ROOTED_FILE_SYSTEM_H_

// A file system confined to one directory: every path it is given must name the root or
// something under it, without ".." components, and must still be under the root once
// every symbolic link on the way is resolved. A link inside the root that leads out of
// it (placed there by accident or by someone with write access to the root) is refused
// with PERMISSION_DENIED instead of followed. The checkpoint store works through one
// over its --root, so no request can make it read, write or delete a file elsewhere.
// Errors name paths relative to the root, not the server's directories.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/file_system.h"
#include "core/io/file_system_wrapper.h"

namespace overseer {

// Whether `path` names `root` or something under it, by its components alone: no "."
// or ".." component, no empty one but a trailing '/'. `root` has no trailing '/'.
bool IsLexicallyUnder(absl::string_view root, absl::string_view path);

// Whether `path`, with its symbolic links resolved, is `root` or under it, by `fs`:
// the longest prefix of `path` that exists is resolved (RealPath), so a path still to
// be created is judged by the directory it would be created in. `real_root` is the
// root's RealPath. OK, PERMISSION_DENIED naming `path` relative to the root, or the
// error of resolving it.
absl::Status CheckResolvesUnder(FileSystem* fs, const std::string& root,
                                const std::string& real_root, const std::string& path);

// `status` with `root` taken out of its message: "<root>/a/b" becomes "a/b" and "<root>"
// ".", so that an error a server sends does not show its directories. Unchanged if OK
// or `root` is empty.
absl::Status WithPathsRelativeTo(std::string root, const absl::Status& status);

// Thread-safe, as its target. Each call costs a realpath(3) of its path (and lstat of
// its missing parents) before the target's call; files already opened are not checked
// again.
class RootedFileSystem : public FileSystemWrapper {
 public:
  // `root` must exist (a directory); trailing '/'s are dropped. `target` is borrowed.
  static absl::StatusOr<std::unique_ptr<RootedFileSystem>> Create(FileSystem* target,
                                                                  std::string root);

  const std::string& root() const { return root_; }

  // `path` relative to the root ("." for the root itself), for messages that should not
  // show a server's directories; `path` unchanged when it is not under the root.
  std::string Relative(const std::string& path) const;

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::Status FileExists(const std::string& path) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status SyncDir(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<std::string> RealPath(const std::string& path) override;

 private:
  RootedFileSystem(FileSystem* target, std::string root, std::string real_root)
      : FileSystemWrapper(target), root_(std::move(root)), real_root_(std::move(real_root)) {}

  // OK if `path` may be used; PERMISSION_DENIED otherwise.
  absl::Status Check(const std::string& path);
  // `status` with the root's path taken out of its message (paths relative to it).
  absl::Status Relativize(const absl::Status& status) const;
  template <typename T>
  absl::StatusOr<T> Relativized(absl::StatusOr<T> result) const {
    if (result.ok()) return result;
    return Relativize(result.status());
  }
  absl::Status Relativized(const absl::Status& status) const { return Relativize(status); }

  const std::string root_;
  const std::string real_root_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_IO_ROOTED_FILE_SYSTEM_H_
