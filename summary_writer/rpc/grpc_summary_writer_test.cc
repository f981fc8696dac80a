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
    ASSERT_TRUE(StartServer(0).ok());
    channel_ = grpc::CreateChannel(runner_->address(), grpc::InsecureChannelCredentials());
  }

  // Serves a new service instance on `port` (0: a free one) over logdir_.
  absl::Status StartServer(int port) {
    SummaryWriterServiceOptions options;
    options.logdir = logdir_;
    EventWriterEnv env;
    env.clock = Clock::Real();
    impl_ = std::make_unique<SummaryWriterServiceImpl>(options, env, nullptr);
    service_ = std::make_unique<GrpcSummaryWriterService>(impl_.get());
    ServerRunnerOptions runner_options;
    runner_options.component = "summary_writer";
    runner_options.host = "127.0.0.1";
    runner_options.port = port;
    runner_options.metrics_port = -1;
    runner_options.handle_signals = false;
    runner_ = std::make_unique<ServerRunner>(runner_options);
    runner_->AddService(service_.get());
    return runner_->Start();
  }

  // Waits until the channel, which backs off after failed connections, is connected
  // to the restarted server.
  void AwaitChannelReady() {
    ASSERT_TRUE(channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(60))));
  }

  // Stops the server as a crash would (no drain), forgetting its writers.
  void StopServer() {
    runner_.reset();
    service_.reset();
    impl_.reset();
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
  // Not a multiple of the server's queue: Flush must write out a partial queue.
  constexpr int kEvents = 103;
  auto sink = GrpcEventSink::Open(channel_, "remote/run", options, Clock::Real());
  ASSERT_TRUE(sink.ok()) << sink.status();
  for (int i = 0; i < kEvents; ++i) ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  ASSERT_TRUE((*sink)->Flush().ok());
  const std::string path = logdir_ + "/" + (*sink)->file();
  auto events = ReadEventFile(FileSystem::Posix(), path);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), kEvents + 1u);
  for (int i = 0; i < kEvents; ++i) {
    EXPECT_EQ((*events)[i + 1].step(), i);
    EXPECT_GT((*events)[i + 1].wall_time(), 1.5e9);  // Stamped by the client.
  }
  // Nothing new: a flush of what the server holds.
  ASSERT_TRUE((*sink)->Flush().ok());
  for (int i = kEvents; i < kEvents + 3; ++i) {
    ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  }
  ASSERT_TRUE((*sink)->Close().ok());
  EXPECT_EQ(ReadEventFile(FileSystem::Posix(), path)->size(), kEvents + 4u);
  EXPECT_TRUE(absl::IsFailedPrecondition((*sink)->WriteEvent(Scalar(0))));
  EXPECT_EQ(impl_->open_writers(), 0);
}

TEST_F(GrpcSummaryWriterTest, BadRunIsInvalidArgumentOverTheWire) {
  auto sink = GrpcEventSink::Open(channel_, "../../etc", {}, Clock::Real());
  EXPECT_TRUE(absl::IsInvalidArgument(sink.status())) << sink.status();
}

TEST_F(GrpcSummaryWriterTest, AServerShuttingDownIsUnavailable) {
  auto sink = GrpcEventSink::Open(channel_, "run", {}, Clock::Real());
  ASSERT_TRUE(sink.ok());
  ASSERT_TRUE(impl_->CloseAll().ok());
  ASSERT_TRUE((*sink)->WriteEvent(Scalar(1)).ok());
  // The writer is gone and no new one can be opened.
  const absl::Status flushed = (*sink)->Flush();
  EXPECT_TRUE(absl::IsUnavailable(flushed)) << flushed;
}

TEST_F(GrpcSummaryWriterTest, AfterAServerRestartEventsGoToANewFile) {
  GrpcEventSinkOptions options;
  options.batch_size = 4;
  auto sink = GrpcEventSink::Open(channel_, "run", options, Clock::Real());
  ASSERT_TRUE(sink.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  ASSERT_TRUE((*sink)->Flush().ok());
  const std::string first = (*sink)->file();

  const int port = runner_->port();
  StopServer();
  ASSERT_TRUE(StartServer(port).ok());
  // Sent on a stream to the new server, which does not know the writer: reopened.
  for (int i = 10; i < 15; ++i) ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  const absl::Status flushed = (*sink)->Flush();
  ASSERT_TRUE(flushed.ok()) << flushed;
  EXPECT_EQ((*sink)->reopens(), 1);
  const std::string second = (*sink)->file();
  EXPECT_NE(second, first);

  auto before = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + first);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->size(), 11u);  // The file version event, then steps 0..9.
  auto after = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + second);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 6u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*after)[i + 1].step(), 10 + i);
  ASSERT_TRUE((*sink)->Close().ok());
  EXPECT_EQ(impl_->open_writers(), 0);
}

TEST_F(GrpcSummaryWriterTest, WhileTheServerIsDownEventsAreKeptAndFlushFails) {
  GrpcEventSinkOptions options;
  options.batch_size = 2;
  options.rpc_timeout = absl::Seconds(5);
  auto sink = GrpcEventSink::Open(channel_, "run", options, Clock::Real());
  ASSERT_TRUE(sink.ok());
  const int port = runner_->port();
  StopServer();
  // Batches that cannot be sent stay queued; writing goes on.
  for (int i = 0; i < 6; ++i) ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  EXPECT_TRUE(absl::IsUnavailable((*sink)->Flush()));

  ASSERT_TRUE(StartServer(port).ok());
  AwaitChannelReady();
  const absl::Status flushed = (*sink)->Flush();
  ASSERT_TRUE(flushed.ok()) << flushed;
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + (*sink)->file());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 7u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ((*events)[i + 1].step(), i);
}

TEST_F(GrpcSummaryWriterTest, PendingEventsAreBounded) {
  GrpcEventSinkOptions options;
  options.batch_size = 1;
  options.max_pending_events = 3;
  options.rpc_timeout = absl::Seconds(5);
  auto sink = GrpcEventSink::Open(channel_, "run", options, Clock::Real());
  ASSERT_TRUE(sink.ok());
  const int port = runner_->port();
  StopServer();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
  ASSERT_TRUE(StartServer(port).ok());
  AwaitChannelReady();
  ASSERT_TRUE((*sink)->Flush().ok());
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + (*sink)->file());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 4u);  // The newest three.
  for (int i = 0; i < 3; ++i) EXPECT_EQ((*events)[i + 1].step(), 7 + i);
}

TEST_F(GrpcSummaryWriterTest, AStreamIsEndedOnceItHoldsMaxPendingEvents) {
  GrpcEventSinkOptions options;
  options.batch_size = 4;
  options.max_pending_events = 20;
  auto sink = GrpcEventSink::Open(channel_, "run", options, Clock::Real());
  ASSERT_TRUE(sink.ok());
  // Without a flush the sink keeps what it streamed until the stream is acknowledged;
  // it never holds much more than max_pending_events.
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE((*sink)->WriteEvent(Scalar(i)).ok());
    ASSERT_LE((*sink)->pending_events(), options.max_pending_events + options.batch_size);
  }
  ASSERT_TRUE((*sink)->Flush().ok());
  EXPECT_EQ((*sink)->pending_events(), 0);
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + (*sink)->file());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 501u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ((*events)[i + 1].step(), i);
}

TEST_F(GrpcSummaryWriterTest, WriterIdsOfAnotherIncarnationAreUnknown) {
  auto sink = GrpcEventSink::Open(channel_, "run", {}, Clock::Real());
  ASSERT_TRUE(sink.ok());
  const int port = runner_->port();
  StopServer();
  ASSERT_TRUE(StartServer(port).ok());
  AwaitChannelReady();  // Else Open may find the channel backing off: UNAVAILABLE.
  // Another client opens a writer on the new server; the old client's writes must not
  // land in its file.
  auto other = GrpcEventSink::Open(channel_, "run", {}, Clock::Real());
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*sink)->WriteEvent(Scalar(1)).ok());
  ASSERT_TRUE((*sink)->Flush().ok());
  ASSERT_TRUE((*other)->Flush().ok());
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + (*other)->file());
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->size(), 1u);  // Only its file version event.
  EXPECT_NE((*sink)->file(), (*other)->file());
}

TEST_F(GrpcSummaryWriterTest, StartStepOverTheWire) {
  GrpcEventSinkOptions options;
  options.start_step = 42;
  auto sink = GrpcEventSink::Open(channel_, "run", options, Clock::Real());
  ASSERT_TRUE(sink.ok());
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + (*sink)->file());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].step(), 42);
  EXPECT_EQ((*events)[1].session_log().status(), SessionLog::START);
}

}  // namespace
}  // namespace overseer
