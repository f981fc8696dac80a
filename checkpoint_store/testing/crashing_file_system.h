#ifndef OVERSEER_CHECKPOINT_STORE_TESTING_CRASHING_FILE_SYSTEM_H_
#define OVERSEER_CHECKPOINT_STORE_TESTING_CRASHING_FILE_SYSTEM_H_

// A file system that "crashes" at its N-th mutating operation (create, append, sync,
// close, rename, delete, directory sync): that operation and every later one fail, as
// if the process had been killed there. What was written before stays on the base file
// system, exactly what a kill -9 leaves. Reads keep working. Thread-safe.

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/io/file_system.h"
#include "core/io/file_system_wrapper.h"

namespace overseer {
namespace test {

class CrashingFileSystem : public FileSystemWrapper {
 public:
  // Crashes at mutating operation number `crash_at` (1-based; 0 never).
  CrashingFileSystem(FileSystem* base, int crash_at)
      : FileSystemWrapper(base), crash_at_(crash_at) {}

  bool crashed() const { return crashed_; }
  int operations() const { return ops_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    if (Crash()) return Crashed("create", path);
    auto file = target()->NewWritableFile(path);
    if (!file.ok()) return file.status();
    return std::unique_ptr<WritableFile>(new File(this, path, *std::move(file)));
  }
  absl::Status CreateDirs(const std::string& path) override {
    if (Crash()) return Crashed("mkdir", path);
    return target()->CreateDirs(path);
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (Crash()) return Crashed("rename", from);
    return target()->RenameFile(from, to);
  }
  absl::Status DeleteFile(const std::string& path) override {
    if (Crash()) return Crashed("delete", path);
    return target()->DeleteFile(path);
  }
  absl::Status SyncDir(const std::string& path) override {
    if (Crash()) return Crashed("syncdir", path);
    return target()->SyncDir(path);
  }

 private:
  class File : public WritableFileWrapper {
   public:
    File(CrashingFileSystem* fs, std::string path, std::unique_ptr<WritableFile> base)
        : WritableFileWrapper(std::move(base)), fs_(fs), path_(std::move(path)) {}
    absl::Status Append(absl::string_view data) override {
      if (fs_->Crash()) {
        // A write cut short by the crash.
        target()->Append(data.substr(0, data.size() / 2)).IgnoreError();
        return Crashed("append", path_);
      }
      return target()->Append(data);
    }
    absl::Status Sync() override {
      if (fs_->Crash()) return Crashed("sync", path_);
      return target()->Sync();
    }
    absl::Status Close() override {
      if (fs_->Crash()) return Crashed("close", path_);
      return target()->Close();
    }

   private:
    CrashingFileSystem* fs_;
    std::string path_;
  };

  static absl::Status Crashed(const char* op, const std::string& path) {
    return absl::UnavailableError(absl::StrCat("injected crash at ", op, " ", path));
  }
  // Counts one mutating operation; true if the process is (now) dead.
  bool Crash() {
    if (crashed_) return true;
    if (++ops_ == crash_at_) crashed_ = true;
    return crashed_;
  }

  const int crash_at_;
  std::atomic<int> ops_{0};
  std::atomic<bool> crashed_{false};
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_TESTING_CRASHING_FILE_SYSTEM_H_
