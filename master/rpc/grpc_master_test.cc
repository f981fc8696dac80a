#include "absl/strings/match.h"
#include "core/rpc/server_runner.h"
#include "gtest/gtest.h"
#include "master/master.h"
#include "master/placement_test_util.h"
#include "master/rpc/grpc_master.h"
#include "master/rpc/grpc_master_service.h"
#include "master/testing/fake_workers.h"

namespace overseer {
namespace {

class GrpcMasterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterOptions options;
    options.gc_thread = false;
    options.readiness.check_thread = false;
    master_ = std::make_unique<Master>(MasterEnv{&cache_, &clock_}, options);
    ServerRunnerOptions ro;
    ro.component = "master";
    ro.host = "127.0.0.1";
    ro.metrics_port = -1;
    ro.handle_signals = false;
    runner_ = std::make_unique<ServerRunner>(ro);
    service_ = std::make_unique<GrpcMasterService>(master_.get(), runner_->metrics(),
                                                   [this] { return master_->NumSessions(); });
    runner_->AddService(service_.get());
    ASSERT_TRUE(runner_->Start().ok());
    client_ = std::make_unique<GrpcMaster>(NewMasterChannel(runner_->address()),
                                           absl::Seconds(30));
  }

  test::FakeClock clock_;
  test::FakeCache cache_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<ServerRunner> runner_;
  std::unique_ptr<GrpcMasterService> service_;
  std::unique_ptr<GrpcMaster> client_;
};

TEST_F(GrpcMasterTest, SessionRoundTripAndErrorCodesCrossTheWire) {
  CreateSessionRequest create;
  test::AddConst(create.mutable_graph_def(), "w", 2, "/job:ps");
  CreateSessionResponse created;
  ASSERT_TRUE(client_->CreateSession(create, &created).ok());
  RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch("w:0");
  RunStepResponse out;
  ASSERT_TRUE(client_->RunStep(run, &out).ok());
  ASSERT_EQ(out.tensor_size(), 1);
  run.set_session_handle("gone");
  absl::Status s = client_->RunStep(run, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(absl::StrContains(s.message(), "gone")) << s;
  ListDevicesRequest list;
  ListDevicesResponse devices;
  ASSERT_TRUE(client_->ListDevices(list, &devices).ok());
  EXPECT_EQ(devices.remote_device_size(), 2);
  const std::string text = [&] {
    std::string t;
    for (const auto& f : runner_->metrics()->Collect()) t += f.name + " ";
    return t;
  }();
  EXPECT_TRUE(absl::StrContains(text, "overseer_master_steps_total")) << text;
  EXPECT_TRUE(absl::StrContains(text, "overseer_master_rpc_errors_total")) << text;
}

TEST_F(GrpcMasterTest, ReadinessAndJobDoneCrossTheWire) {
  WaitForReadyRequest wait;
  wait.set_key("model");
  wait.set_timeout_ms(10);
  WaitForReadyResponse answer;
  ASSERT_TRUE(client_->WaitForReady(wait, &answer).ok());
  EXPECT_FALSE(answer.ready());
  EXPECT_TRUE(absl::StrContains(answer.reason(), "'model'")) << answer.reason();
  MarkReadyRequest mark;
  mark.set_key("model");
  MarkReadyResponse marked;
  ASSERT_TRUE(client_->MarkReady(mark, &marked).ok());
  answer.Clear();
  ASSERT_TRUE(client_->WaitForReady(wait, &answer).ok());
  EXPECT_TRUE(answer.ready());
  WithdrawReadyRequest withdraw;
  withdraw.set_key("model");
  WithdrawReadyResponse withdrawn;
  ASSERT_TRUE(client_->WithdrawReady(withdraw, &withdrawn).ok());
  answer.Clear();
  ASSERT_TRUE(client_->WaitForReady(wait, &answer).ok());
  EXPECT_FALSE(answer.ready());
  JobDoneResponse done;
  ASSERT_TRUE(client_->JobDone(JobDoneRequest(), &done).ok());
  EXPECT_EQ(cache_.ps()->job_dones, 1);
  cache_.ps()->dead = true;
  absl::Status s = client_->MarkReady(mark, &marked);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
}

}  // namespace
}  // namespace overseer
