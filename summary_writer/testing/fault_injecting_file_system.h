#ifndef OVERSEER_SUMMARY_WRITER_TESTING_FAULT_INJECTING_FILE_SYSTEM_H_
#define OVERSEER_SUMMARY_WRITER_TESTING_FAULT_INJECTING_FILE_SYSTEM_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/file_system.h"

namespace overseer {
namespace test {

// Forwards to a base file system, failing Append or Sync of files it created while
// told to. A failing Append first writes half of its data, as a full disk might.
// Thread-safe.
class FaultInjectingFileSystem : public FileSystem {
 public:
  explicit FaultInjectingFileSystem(FileSystem* base) : base_(base) {}

  void set_fail_appends(bool fail) { fail_appends_ = fail; }
  void set_fail_syncs(bool fail) { fail_syncs_ = fail; }
  int syncs() const { return syncs_; }
  int appends() const { return appends_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    auto file = base_->NewWritableFile(path);
    if (!file.ok()) return file.status();
    return std::unique_ptr<WritableFile>(new File(this, path, *std::move(file)));
  }
  absl::Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    return base_->ListDir(path);
  }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    return base_->ReadFile(path);
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return base_->NewRandomAccessFile(path);
  }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    return base_->GetFileSize(path);
  }
  absl::Status FileExists(const std::string& path) override { return base_->FileExists(path); }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    return base_->RenameFile(from, to);
  }
  absl::Status DeleteFile(const std::string& path) override { return base_->DeleteFile(path); }
  absl::Status SyncDir(const std::string& path) override { return base_->SyncDir(path); }

 private:
  class File : public WritableFile {
   public:
    File(FaultInjectingFileSystem* fs, std::string path, std::unique_ptr<WritableFile> base)
        : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}
    absl::Status Append(absl::string_view data) override {
      ++fs_->appends_;
      if (fs_->fail_appends_) {
        base_->Append(data.substr(0, data.size() / 2)).IgnoreError();
        return absl::ResourceExhaustedError(absl::StrCat("injected: disk full writing ", path_));
      }
      return base_->Append(data);
    }
    absl::Status Sync() override {
      ++fs_->syncs_;
      if (fs_->fail_syncs_) return absl::InternalError(absl::StrCat("injected: sync ", path_));
      return base_->Sync();
    }
    absl::Status Close() override { return base_->Close(); }

   private:
    FaultInjectingFileSystem* fs_;
    std::string path_;
    std::unique_ptr<WritableFile> base_;
  };

  FileSystem* const base_;
  std::atomic<bool> fail_appends_{false};
  std::atomic<bool> fail_syncs_{false};
  std::atomic<int> syncs_{0};
  std::atomic<int> appends_{0};
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_TESTING_FAULT_INJECTING_FILE_SYSTEM_H_
