#include "worker/rendezvous_mgr.h"

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(RendezvousMgrTest, AStepOnlyReceiversCreatedGoesWithTheLastOfThem) {
  RendezvousMgr mgr;
  absl::StatusOr<StepState> first = mgr.FindForRecv(5);
  absl::StatusOr<StepState> second = mgr.FindForRecv(5);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->rendezvous, second->rendezvous);
  mgr.EndRecv(5, *first);
  EXPECT_EQ(mgr.num_steps(), 1);
  mgr.EndRecv(5, *second);
  EXPECT_EQ(mgr.num_steps(), 0);
  // Not a cleanup: the step may still come, and a RecvTensor may create it again.
  absl::StatusOr<StepState> again = mgr.FindForRecv(5);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->rendezvous, first->rendezvous);
  mgr.EndRecv(5, *again);
  EXPECT_EQ(mgr.num_steps(), 0);
}

TEST(RendezvousMgrTest, AStepThatRanStaysUntilCleanupOrRelease) {
  RendezvousMgr mgr;
  absl::StatusOr<StepState> receiver = mgr.FindForRecv(6);
  ASSERT_TRUE(receiver.ok());
  const StepState ran = mgr.FindOrCreate(6);  // Its RunGraph came while a peer waited.
  EXPECT_EQ(ran.rendezvous, receiver->rendezvous);
  mgr.EndRecv(6, *receiver);
  EXPECT_EQ(mgr.num_steps(), 1);
  mgr.Release(6);
  EXPECT_EQ(mgr.num_steps(), 0);

  mgr.FindOrCreate(7);
  absl::StatusOr<StepState> late = mgr.FindForRecv(7);
  ASSERT_TRUE(late.ok());
  mgr.EndRecv(7, *late);
  EXPECT_EQ(mgr.num_steps(), 1);
  mgr.Cleanup(7);
  EXPECT_EQ(mgr.num_steps(), 0);
}

TEST(RendezvousMgrTest, AReceiverOfAnEarlierIncarnationOfTheStepLeavesTheNewOneAlone) {
  RendezvousMgr mgr;
  absl::StatusOr<StepState> old_receiver = mgr.FindForRecv(8);
  ASSERT_TRUE(old_receiver.ok());
  mgr.Release(8);                                        // Gone while the receiver still waits...
  absl::StatusOr<StepState> fresh = mgr.FindForRecv(8);  // ...and created again.
  ASSERT_TRUE(fresh.ok());
  mgr.EndRecv(8, *old_receiver);
  EXPECT_EQ(mgr.num_steps(), 1);
  mgr.EndRecv(8, *fresh);
  EXPECT_EQ(mgr.num_steps(), 0);
}

TEST(RendezvousMgrTest, ACleanedStepRefusesReceivers) {
  RendezvousMgr mgr;
  mgr.Cleanup(9);
  EXPECT_EQ(mgr.FindForRecv(9).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(mgr.num_steps(), 0);
}

}  // namespace
}  // namespace overseer
