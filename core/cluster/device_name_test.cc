#include "core/cluster/device_name.h"

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(DeviceNameTest, ParsesAndFormatsFullName) {
  auto d = DeviceName::Parse("/job:ps/replica:0/task:1/device:CPU:0");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->job, "ps");
  EXPECT_TRUE(d->has_task);
  EXPECT_EQ(d->task, 1);
  EXPECT_EQ(d->type, "CPU");
  EXPECT_TRUE(d->IsFullySpecified());
  EXPECT_EQ(d->ToString(), "/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(d->TaskName(), "/job:ps/replica:0/task:1");
}

TEST(DeviceNameTest, PartialAndLegacyNames) {
  EXPECT_EQ(DeviceName::Parse("/job:ps")->ToString(), "/job:ps");
  EXPECT_EQ(DeviceName::Parse("/task:2/job:worker")->ToString(), "/job:worker/task:2");
  EXPECT_EQ(DeviceName::Parse("/cpu:0")->ToString(), "/device:CPU:0");
  EXPECT_EQ(DeviceName::Parse("/device:CPU:*")->ToString(), "/device:CPU");
  EXPECT_EQ(DeviceName::Parse("")->ToString(), "");
  EXPECT_FALSE(DeviceName::Parse("/job:ps")->IsFullySpecified());
}

TEST(DeviceNameTest, RejectsMalformedNames) {
  for (const char* bad : {"job:ps", "/job:", "/job:ps/task:x", "/task:-1", "/job:a/job:b",
                          "/replica:0/replica:1", "/bogus", "/job:ps//task:0", "/device:CPU:0:1"}) {
    auto d = DeviceName::Parse(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(d.status().message().find(bad), std::string::npos) << d.status();
  }
}

TEST(DeviceNameTest, PartialNamesMatchFullNames) {
  const DeviceName full = *DeviceName::Parse("/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_TRUE(DeviceName::Parse("/job:ps")->Matches(full));
  EXPECT_TRUE(DeviceName::Parse("")->Matches(full));
  EXPECT_TRUE(DeviceName::Parse("/task:1")->Matches(full));
  EXPECT_TRUE(DeviceName::Parse("/device:CPU:0")->Matches(full));
  EXPECT_FALSE(DeviceName::Parse("/job:worker")->Matches(full));
  EXPECT_FALSE(DeviceName::Parse("/job:ps/task:0")->Matches(full));
  EXPECT_FALSE(DeviceName::Parse("/device:GPU:0")->Matches(full));
}

TEST(DeviceNameTest, MergeCombinesAndDetectsConflicts) {
  DeviceName a = *DeviceName::Parse("/job:ps");
  ASSERT_TRUE(a.MergeFrom(*DeviceName::Parse("/task:1/device:CPU:0")).ok());
  EXPECT_EQ(a.ToString(), "/job:ps/task:1/device:CPU:0");
  absl::Status s = a.MergeFrom(*DeviceName::Parse("/job:worker"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("job"), std::string::npos) << s;
  EXPECT_EQ(a.ToString(), "/job:ps/task:1/device:CPU:0");  // Unchanged on conflict.
}

TEST(DeviceNameTest, FullDeviceName) {
  EXPECT_EQ(FullDeviceName("worker", 3), "/job:worker/replica:0/task:3/device:CPU:0");
}

}  // namespace
}  // namespace overseer
