#include "core/io/rooted_file_system.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

bool IsUnder(absl::string_view root, absl::string_view path) {
  if (path == root) return true;
  if (root == "/") return absl::StartsWith(path, "/");
  return path.size() > root.size() && absl::StartsWith(path, root) && path[root.size()] == '/';
}

std::string RelativeTo(const std::string& root, const std::string& path) {
  if (path == root) return ".";
  if (!IsUnder(root, path)) return path;
  return path.substr(root == "/" ? 1 : root.size() + 1);
}

}  // namespace

bool IsLexicallyUnder(absl::string_view root, absl::string_view path) {
  if (!IsUnder(root, path)) return false;
  absl::string_view rest = path.substr(root.size());
  while (absl::ConsumePrefix(&rest, "/")) {
    const size_t slash = rest.find('/');
    const absl::string_view component = rest.substr(0, slash);
    if (component == "." || component == "..") return false;
    if (component.empty() && slash != absl::string_view::npos) return false;  // "//"
    if (slash == absl::string_view::npos) break;
    rest = rest.substr(slash);
  }
  return true;
}

absl::Status CheckResolvesUnder(FileSystem* fs, const std::string& root,
                                const std::string& real_root, const std::string& path) {
  std::string existing = path;
  while (true) {
    absl::StatusOr<std::string> real = fs->RealPath(existing);
    if (real.ok()) {
      if (IsUnder(real_root, *real)) return absl::OkStatus();
      return absl::PermissionDeniedError(
          absl::StrCat("'", RelativeTo(root, path), "' leads out of the root through '",
                       RelativeTo(root, existing), "', a symbolic link"));
    }
    if (!absl::IsNotFound(real.status())) return real.status();
    // Missing, or a link to something missing (which lstat still finds).
    if (fs->IsDirectory(existing).ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("'", RelativeTo(root, path), "' goes through '", RelativeTo(root, existing),
                       "', a symbolic link to nothing"));
    }
    if (existing == root || existing == "/" || existing == ".") return real.status();
    existing = Dirname(existing);
  }
}

absl::StatusOr<std::unique_ptr<RootedFileSystem>> RootedFileSystem::Create(FileSystem* target,
                                                                           std::string root) {
  if (root.empty()) return absl::InvalidArgumentError("the root is empty");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  ASSIGN_OR_RETURN(std::string real_root, target->RealPath(root));
  return std::unique_ptr<RootedFileSystem>(
      new RootedFileSystem(target, std::move(root), std::move(real_root)));
}

std::string RootedFileSystem::Relative(const std::string& path) const {
  return RelativeTo(root_, path);
}

absl::Status WithPathsRelativeTo(std::string root, const absl::Status& status) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (status.ok() || root.empty() || root == "/" || !absl::StrContains(status.message(), root)) {
    return status;
  }
  return absl::Status(status.code(),
                      absl::StrReplaceAll(status.message(), {{root + "/", ""}, {root, "."}}));
}

absl::Status RootedFileSystem::Relativize(const absl::Status& status) const {
  return WithPathsRelativeTo(root_, status);
}

absl::Status RootedFileSystem::Check(const std::string& path) {
  if (!IsLexicallyUnder(root_, path)) {
    return absl::PermissionDeniedError(absl::StrCat("'", path, "' is not under the root"));
  }
  return Relativize(CheckResolvesUnder(target(), root_, real_root_, path));
}

absl::StatusOr<std::unique_ptr<WritableFile>> RootedFileSystem::NewWritableFile(
    const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->NewWritableFile(path));
}

absl::Status RootedFileSystem::CreateDirs(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->CreateDirs(path));
}

absl::StatusOr<std::vector<std::string>> RootedFileSystem::ListDir(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->ListDir(path));
}

absl::StatusOr<std::string> RootedFileSystem::ReadFile(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->ReadFile(path));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> RootedFileSystem::NewRandomAccessFile(
    const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->NewRandomAccessFile(path));
}

absl::StatusOr<uint64_t> RootedFileSystem::GetFileSize(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->GetFileSize(path));
}

absl::Status RootedFileSystem::FileExists(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->FileExists(path));
}

absl::Status RootedFileSystem::RenameFile(const std::string& from, const std::string& to) {
  RETURN_IF_ERROR(Check(from));
  RETURN_IF_ERROR(Check(to));
  return Relativized(target()->RenameFile(from, to));
}

absl::Status RootedFileSystem::DeleteFile(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->DeleteFile(path));
}

absl::Status RootedFileSystem::SyncDir(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->SyncDir(path));
}

absl::StatusOr<bool> RootedFileSystem::IsDirectory(const std::string& path) {
  // lstat does not follow the last component, so only its parent must resolve inside.
  if (!IsLexicallyUnder(root_, path)) {
    return absl::PermissionDeniedError(absl::StrCat("'", path, "' is not under the root"));
  }
  if (path != root_) RETURN_IF_ERROR(Check(Dirname(path)));
  return Relativized(target()->IsDirectory(path));
}

absl::StatusOr<std::string> RootedFileSystem::RealPath(const std::string& path) {
  RETURN_IF_ERROR(Check(path));
  return Relativized(target()->RealPath(path));
}

}  // namespace overseer
