// RestrictLocalCheckpointLocations, as worker_server applies --checkpoint_roots. Its own
// binary: the restriction is process-wide and is never lifted.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "checkpoint_store/location.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

std::string TmpDir() { return std::getenv("TEST_TMPDIR"); }

TEST(LocationRootsTest, RootsMustBeAbsoluteExistingDirectories) {
  EXPECT_EQ(RestrictLocalCheckpointLocations({"relative/dir"}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RestrictLocalCheckpointLocations({TmpDir() + "/does/not/exist"}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LocationRootsTest, OnlyLocationsUnderARootAreOpened) {
  const std::string root = TmpDir() + "/roots/allowed";
  const std::string outside = TmpDir() + "/roots/outside";
  std::filesystem::create_directories(root);
  std::filesystem::create_directories(outside);
  std::filesystem::create_directory_symlink(outside, root + "/link_out");
  ASSERT_TRUE(RestrictLocalCheckpointLocations({root + "/"}).ok());

  EXPECT_TRUE(ResolveCheckpointLocation(root).ok());
  absl::StatusOr<CheckpointLocation> under = ResolveCheckpointLocation(root + "/job/train");
  ASSERT_TRUE(under.ok()) << under.status();
  EXPECT_TRUE(std::filesystem::is_directory(root + "/job/train"));

  for (const std::string& location :
       {outside + "/new", root + "/../outside/new", root + "/link_out/new", root + "x",
        std::string("relative/new"), std::string("/")}) {
    absl::StatusOr<CheckpointLocation> refused = ResolveCheckpointLocation(location);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied)
        << location << ": " << refused.status();
  }
  EXPECT_FALSE(std::filesystem::exists(outside + "/new")) << "a refused location was created";
  absl::Status message = ResolveCheckpointLocation(outside).status();
  EXPECT_NE(message.message().find("--checkpoint_roots"), std::string::npos) << message;

  // No roots at all: every local directory is refused, stores are not affected.
  ASSERT_TRUE(RestrictLocalCheckpointLocations({}).ok());
  EXPECT_EQ(ResolveCheckpointLocation(root + "/job/train").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ResolveCheckpointLocation("x://host:1/run").status().code(),
            absl::StatusCode::kInvalidArgument);  // Unknown scheme, not a local path.
}

}  // namespace
}  // namespace overseer
