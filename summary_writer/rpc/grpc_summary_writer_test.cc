// The service over a real gRPC channel within one process: GrpcEventSink against
// GrpcSummaryWriterService.

#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/rpc/server_runner.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "summary_writer/event_file_reader.h"
#include "summary_writer/rpc/grpc_event_sink.h"
#include "summary_writer/rpc/grpc_summary_writer_service.h"

namespace overseer {
namespace {

class GrpcSummaryWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    logdir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/grpc", ++counter);
    SummaryWriterServiceOptions options;
    options.logdir = logdir_;
    impl_ = std::make_unique<SummaryWriterServiceImpl>(options, EventWriterEnv(), nullptr);
    service_ = std::make_unique<GrpcSummaryWriterService>(impl_.get());
    ServerRunnerOptions runner_options;
    runner_options.component = "summary_writer";
    runner_options.host = "127.0.0.1";
    runner_options.metrics_port = -1;
    runner_options.handle_signals = false;
    runner_ = std::make_unique<ServerRunner>(runner_options);
    runner_->AddService(service_.get());
    ASSERT_TRUE(runner_->Start().ok());
    channel_ = grpc::CreateChannel(runner_->address(), grpc::InsecureChannelCredentials());
  }

  static Event Scalar(int64_t step) {
    Event e;
    e.set_step(step);
    auto* v = e.mutable_summary()->add_value();
    v->set_tag("accuracy");
    v->set_simple_value(step * 0.01f);
    return e;
  }

  std::string logdir_;
  std::unique_ptr<SummaryWriterServiceImpl> impl_;
  std::unique_ptr<GrpcSummaryWriterService> service_;
  std::unique_ptr<ServerRunner> runner_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(GrpcSummaryWriterTest, EventsArriveInOrderAndFlushMakesThemDurable) {
  GrpcEventSinkOptions options;
  options.batch_size = 7;
  auto sink = GrpcEventSink::Open(channel_, "remote/run", options);
  ASSERT_TRUE(sink.ok()) << sink.status();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  ASSERT_TRUE((*sink)->Flush().ok());
  const std::string path = logdir_ + "/" + (*sink)->file();
  auto events = ReadEventFile(FileSystem::Posix(), path);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 101u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ((*events)[i + 1].step(), i);
    EXPECT_GT((*events)[i + 1].wall_time(), 1.5e9);  // Stamped by the client.
  }
  for (int i = 100; i < 103; ++i) ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  ASSERT_TRUE((*sink)->Close().ok());
  EXPECT_EQ(ReadEventFile(FileSystem::Posix(), path)->size(), 104u);
  EXPECT_TRUE(absl::IsFailedPrecondition((*sink)->WriteEvent(Scalar(0))));
  EXPECT_EQ(impl_->open_writers(), 0);
}

TEST_F(GrpcSummaryWriterTest, BadRunIsInvalidArgumentOverTheWire) {
  auto sink = GrpcEventSink::Open(channel_, "../../etc", {});
  EXPECT_TRUE(absl::IsInvalidArgument(sink.status())) << sink.status();
}

TEST_F(GrpcSummaryWriterTest, ClosedOnTheServerIsNotFound) {
  auto sink = GrpcEventSink::Open(channel_, "run", {});
  ASSERT_TRUE(sink.ok());
  ASSERT_TRUE(impl_->CloseAll().ok());
  ASSERT_TRUE((*sink)->WriteEvent(Scalar(1)).ok());
  EXPECT_TRUE(absl::IsNotFound((*sink)->Flush()));
}

TEST_F(GrpcSummaryWriterTest, StartStepOverTheWire) {
  GrpcEventSinkOptions options;
  options.start_step = 42;
  auto sink = GrpcEventSink::Open(channel_, "run", options);
  ASSERT_TRUE(sink.ok());
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + (*sink)->file());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].step(), 42);
  EXPECT_EQ((*events)[1].session_log().status(), SessionLog::START);
}

}  // namespace
}  // namespace overseer
