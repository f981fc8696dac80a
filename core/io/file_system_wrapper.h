#ifndef OVERSEER_CORE_IO_FILE_SYSTEM_WRAPPER_H_
#define OVERSEER_CORE_IO_FILE_SYSTEM_WRAPPER_H_

// Forwarding wrappers, like LevelDB's EnvWrapper: each method calls the same method of
// a target, so that a subclass (a fault-injecting file system in a test) overrides only
// the operations it changes.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/file_system.h"

namespace overseer {

// Forwards every call to `target`. As thread-safe as the target.
class FileSystemWrapper : public FileSystem {
 public:
  // `target` is borrowed and must outlive the wrapper.
  explicit FileSystemWrapper(FileSystem* target) : target_(target) {}
  FileSystemWrapper(const FileSystemWrapper&) = delete;
  FileSystemWrapper& operator=(const FileSystemWrapper&) = delete;

  // The file system calls are forwarded to.
  FileSystem* target() const { return target_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return target_->NewWritableFile(path);
  }
  absl::Status CreateDirs(const std::string& path) override { return target_->CreateDirs(path); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    return target_->ListDir(path);
  }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    return target_->ReadFile(path);
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return target_->NewRandomAccessFile(path);
  }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    return target_->GetFileSize(path);
  }
  absl::Status FileExists(const std::string& path) override { return target_->FileExists(path); }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    return target_->RenameFile(from, to);
  }
  absl::Status DeleteFile(const std::string& path) override { return target_->DeleteFile(path); }
  absl::Status SyncDir(const std::string& path) override { return target_->SyncDir(path); }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return target_->IsDirectory(path);
  }
  absl::StatusOr<std::string> RealPath(const std::string& path) override {
    return target_->RealPath(path);
  }

 private:
  FileSystem* const target_;
};

// Forwards every call to the file it owns. Not thread-safe, like WritableFile.
class WritableFileWrapper : public WritableFile {
 public:
  explicit WritableFileWrapper(std::unique_ptr<WritableFile> target) : target_(std::move(target)) {}
  WritableFileWrapper(const WritableFileWrapper&) = delete;
  WritableFileWrapper& operator=(const WritableFileWrapper&) = delete;

  // The file calls are forwarded to; owned by the wrapper.
  WritableFile* target() const { return target_.get(); }

  absl::Status Append(absl::string_view data) override { return target_->Append(data); }
  absl::Status Sync() override { return target_->Sync(); }
  absl::Status Close() override { return target_->Close(); }

 private:
  const std::unique_ptr<WritableFile> target_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_IO_FILE_SYSTEM_WRAPPER_H_
