#include "core/io/rooted_file_system.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace overseer {
namespace {

// A root with a file and a run directory in it, and a directory outside it holding a
// secret, reached from inside the root through symbolic links.
class RootedFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    std::filesystem::create_directories(root_ + "/run");
    std::filesystem::create_directories(outside_);
    std::ofstream(root_ + "/run/inside") << "inside";
    std::ofstream(outside_ + "/secret") << "secret";
    std::filesystem::create_directory_symlink(outside_, root_ + "/escape");
    std::filesystem::create_symlink(outside_ + "/secret", root_ + "/run/secret_link");
    std::filesystem::create_symlink(outside_ + "/missing", root_ + "/dangling");
    std::filesystem::create_directory_symlink(root_ + "/run", root_ + "/alias");  // Stays inside.
    auto fs = RootedFileSystem::Create(FileSystem::Posix(), root_ + "/");
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
  }

  std::string base_, root_, outside_;
  std::unique_ptr<RootedFileSystem> fs_;
};

TEST_F(RootedFileSystemTest, PathsUnderTheRootWork) {
  EXPECT_EQ(*fs_->ReadFile(root_ + "/run/inside"), "inside");
  EXPECT_EQ(*fs_->ReadFile(root_ + "/alias/inside"), "inside");  // A link that stays inside.
  ASSERT_TRUE(fs_->CreateDirs(root_ + "/a/b/c").ok());
  auto file = fs_->NewWritableFile(root_ + "/a/b/c/new");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_TRUE(fs_->RenameFile(root_ + "/a/b/c/new", root_ + "/a/renamed").ok());
  EXPECT_TRUE(fs_->DeleteFile(root_ + "/a/renamed").ok());
  EXPECT_TRUE(fs_->ListDir(root_).ok());
  EXPECT_TRUE(absl::IsNotFound(fs_->FileExists(root_ + "/run/nothing")));
  EXPECT_EQ(fs_->Relative(root_ + "/run/inside"), "run/inside");
  EXPECT_EQ(fs_->Relative(root_), ".");
}

TEST_F(RootedFileSystemTest, PathsOutsideTheRootAreRefused) {
  for (const std::string& path :
       {outside_ + "/secret", base_, root_ + "/../outside/secret", root_ + "/run/./inside",
        root_ + "x/file", root_ + "//run/inside", std::string("relative/path")}) {
    EXPECT_TRUE(absl::IsPermissionDenied(fs_->ReadFile(path).status())) << path;
    EXPECT_TRUE(absl::IsPermissionDenied(fs_->CreateDirs(path + "/d"))) << path;
  }
}

TEST_F(RootedFileSystemTest, SymbolicLinksOutOfTheRootAreNotFollowed) {
  const std::vector<std::string> escapes = {root_ + "/escape/secret", root_ + "/run/secret_link",
                                            root_ + "/escape"};
  for (const std::string& path : escapes) {
    absl::StatusOr<std::string> read = fs_->ReadFile(path);
    EXPECT_TRUE(absl::IsPermissionDenied(read.status())) << path << ": " << read.status();
    EXPECT_TRUE(absl::IsPermissionDenied(fs_->DeleteFile(path))) << path;
    EXPECT_TRUE(absl::IsPermissionDenied(fs_->ListDir(path).status())) << path;
  }
  // Nothing is created through them, not even a directory whose creation then fails.
  EXPECT_TRUE(absl::IsPermissionDenied(fs_->CreateDirs(root_ + "/escape/new/dir")));
  EXPECT_TRUE(absl::IsPermissionDenied(fs_->NewWritableFile(root_ + "/escape/planted").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(fs_->CreateDirs(root_ + "/dangling/sub")));
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/new"));
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/planted"));
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/missing"));
  EXPECT_TRUE(std::filesystem::exists(outside_ + "/secret"));
  // The message names the path relative to the root, not the server's directories.
  absl::Status s = fs_->ReadFile(root_ + "/escape/secret").status();
  EXPECT_EQ(s.message().find(base_), std::string::npos) << s;
  EXPECT_NE(s.message().find("escape/secret"), std::string::npos) << s;
  // lstat sees the link itself, which is inside: not a directory.
  EXPECT_FALSE(*fs_->IsDirectory(root_ + "/escape"));
  EXPECT_TRUE(*fs_->IsDirectory(root_ + "/run"));
}

TEST(IsLexicallyUnderTest, Components) {
  EXPECT_TRUE(IsLexicallyUnder("/a", "/a"));
  EXPECT_TRUE(IsLexicallyUnder("/a", "/a/b/c"));
  EXPECT_TRUE(IsLexicallyUnder("/a", "/a/b/"));
  EXPECT_TRUE(IsLexicallyUnder("/", "/etc"));
  EXPECT_FALSE(IsLexicallyUnder("/a", "/ab"));
  EXPECT_FALSE(IsLexicallyUnder("/a", "/a/../b"));
  EXPECT_FALSE(IsLexicallyUnder("/a", "/a/b/.."));
  EXPECT_FALSE(IsLexicallyUnder("/a", "/a/./b"));
  EXPECT_FALSE(IsLexicallyUnder("/a", "/a//b"));
  EXPECT_FALSE(IsLexicallyUnder("/a", "/"));
}

}  // namespace
}  // namespace overseer
