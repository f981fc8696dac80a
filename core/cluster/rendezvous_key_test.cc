#include "core/cluster/rendezvous_key.h"

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(RendezvousKeyTest, FormatsAsTensorFlowAndRoundTrips) {
  const std::string key = MakeRendezvousKey("/job:ps/replica:0/task:0/device:CPU:0", 0xabc,
                                            "/job:worker/replica:0/task:0/device:CPU:0", "w:0");
  EXPECT_EQ(key,
            "/job:ps/replica:0/task:0/device:CPU:0;0000000000000abc;"
            "/job:worker/replica:0/task:0/device:CPU:0;w:0;0:0");
  auto p = ParseRendezvousKey(key);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->src_incarnation, 0xabcu);
  EXPECT_EQ(p->tensor_name, "w:0");
  EXPECT_EQ(p->dst_device, "/job:worker/replica:0/task:0/device:CPU:0");
}

TEST(RendezvousKeyTest, RejectsMalformedKeys) {
  for (const char* bad : {"", "a;b;c", "a;zz;c;d;0:0", ";1;c;d;0:0", "a;1;c;;0:0"}) {
    EXPECT_EQ(ParseRendezvousKey(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace overseer
