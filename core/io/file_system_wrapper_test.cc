#include "core/io/file_system_wrapper.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// Changes one operation; everything else reaches the target.
class NoDeletes : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  absl::Status DeleteFile(const std::string& path) override {
    return absl::PermissionDeniedError(absl::StrCat("no deletes: ", path));
  }
};

TEST(FileSystemWrapperTest, ForwardsWhatASubclassDoesNotOverride) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/wrapper");
  NoDeletes fs(FileSystem::Posix());
  EXPECT_EQ(fs.target(), FileSystem::Posix());
  ASSERT_TRUE(fs.CreateDirs(dir).ok());
  {
    auto file = fs.NewWritableFile(dir + "/a.tmp");
    ASSERT_TRUE(file.ok()) << file.status();
    WritableFileWrapper wrapped(*std::move(file));
    ASSERT_TRUE(wrapped.Append("hello").ok());
    ASSERT_TRUE(wrapped.Sync().ok());
    ASSERT_TRUE(wrapped.Close().ok());
  }
  ASSERT_TRUE(fs.RenameFile(dir + "/a.tmp", dir + "/a").ok());
  ASSERT_TRUE(fs.SyncDir(dir).ok());
  EXPECT_TRUE(fs.FileExists(dir + "/a").ok());
  EXPECT_TRUE(absl::IsNotFound(fs.FileExists(dir + "/a.tmp")));
  EXPECT_EQ(*fs.ReadFile(dir + "/a"), "hello");
  EXPECT_EQ(*fs.GetFileSize(dir + "/a"), 5u);
  EXPECT_EQ(*fs.ListDir(dir), std::vector<std::string>{"a"});
  auto reader = fs.NewRandomAccessFile(dir + "/a");
  ASSERT_TRUE(reader.ok()) << reader.status();
  char scratch[8];
  EXPECT_EQ(*(*reader)->Read(1, 3, scratch), "ell");

  EXPECT_TRUE(absl::IsPermissionDenied(fs.DeleteFile(dir + "/a")));
  EXPECT_TRUE(fs.FileExists(dir + "/a").ok());
  EXPECT_TRUE(fs.target()->DeleteFile(dir + "/a").ok());
}

}  // namespace
}  // namespace overseer
