#ifndef OVERSEER_SUMMARY_WRITER_TESTING_FAULT_INJECTING_FILE_SYSTEM_H_
#define OVERSEER_SUMMARY_WRITER_TESTING_FAULT_INJECTING_FILE_SYSTEM_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/io/file_system.h"
#include "core/io/file_system_wrapper.h"

namespace overseer {
namespace test {

// Forwards to a base file system, failing Append or Sync of files it created while
// told to. A failing Append first writes half of its data, as a full disk might.
// Thread-safe.
class FaultInjectingFileSystem : public FileSystemWrapper {
 public:
  explicit FaultInjectingFileSystem(FileSystem* base) : FileSystemWrapper(base) {}

  void set_fail_appends(bool fail) { fail_appends_ = fail; }
  void set_fail_syncs(bool fail) { fail_syncs_ = fail; }
  int syncs() const { return syncs_; }
  int appends() const { return appends_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    auto file = target()->NewWritableFile(path);
    if (!file.ok()) return file.status();
    return std::unique_ptr<WritableFile>(new File(this, path, *std::move(file)));
  }

 private:
  class File : public WritableFileWrapper {
   public:
    File(FaultInjectingFileSystem* fs, std::string path, std::unique_ptr<WritableFile> base)
        : WritableFileWrapper(std::move(base)), fs_(fs), path_(std::move(path)) {}
    absl::Status Append(absl::string_view data) override {
      ++fs_->appends_;
      if (fs_->fail_appends_) {
        target()->Append(data.substr(0, data.size() / 2)).IgnoreError();
        return absl::ResourceExhaustedError(absl::StrCat("injected: disk full writing ", path_));
      }
      return target()->Append(data);
    }
    absl::Status Sync() override {
      ++fs_->syncs_;
      if (fs_->fail_syncs_) return absl::InternalError(absl::StrCat("injected: sync ", path_));
      return target()->Sync();
    }

   private:
    FaultInjectingFileSystem* fs_;
    std::string path_;
  };

  std::atomic<bool> fail_appends_{false};
  std::atomic<bool> fail_syncs_{false};
  std::atomic<int> syncs_{0};
  std::atomic<int> appends_{0};
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_TESTING_FAULT_INJECTING_FILE_SYSTEM_H_
