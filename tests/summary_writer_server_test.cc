// The real summary_writer_server binary in its own process: started on port 0, used
// over gRPC by the client SummaryWriter and a raw stub, checked for health and
// metrics, stopped with SIGTERM (which must flush and close every file and exit 0).

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/summary/summary_writer.h"
#include "core/rpc/client_context.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "core/rpc/testing/http_get.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/summary_writer_service.grpc.pb.h"
#include "summary_writer/event_file_reader.h"
#include "testing/server_process.h"

namespace overseer {
namespace {

TEST(SummaryWriterServerTest, ServesWritesAndFlushesOnSigterm) {
  const std::string logdir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/server_logs");
  test::ServerProcess server("summary_writer/summary_writer_server",
                             {"--logdir=" + logdir, "--flush_secs=3600", "--max_queue=1000"});
  ASSERT_GT(server.port(), 0) << server.log();
  ASSERT_GT(server.metrics_port(), 0) << server.log();
  // The start-up line follows the port file.
  EXPECT_TRUE(server.WaitForLog("summary_writer version ")) << server.log();
  auto channel = grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials());

  // Health: SERVING once the start-up line is out.
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckResponse health_response;
  auto health_context = NewClientContext(absl::Seconds(10));
  ASSERT_TRUE(health->Check(health_context.get(), {}, &health_response).ok());
  EXPECT_EQ(health_response.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  // The client SummaryWriter: everything is durable after Flush.
  SummaryWriterOptions options;
  options.background_flush = false;
  auto writer =
      SummaryWriter::Create(absl::StrCat("grpc://", server.target(), "/exp/train"), options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int step = 0; step < 50; ++step) {
    Summary summary;
    summary.add_value()->set_tag("loss");
    summary.mutable_value(0)->set_simple_value(step);
    ASSERT_TRUE((*writer)->AddSummary(summary, step).ok());
  }
  ASSERT_TRUE((*writer)->Flush().ok());
  auto files = ListEventFiles(FileSystem::Posix(), logdir + "/exp/train");
  ASSERT_TRUE(files.ok() && files->size() == 1u);
  auto events = ReadEventFile(FileSystem::Posix(), logdir + "/exp/train/" + (*files)[0]);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->size(), 51u);
  ASSERT_TRUE((*writer)->Close().ok());

  // A bad run never touches the file system outside --logdir.
  auto bad = SummaryWriter::Create(absl::StrCat("grpc://", server.target(), "/a/../../x"));
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  auto stub = SummaryWriterService::NewStub(channel);
  {
    OpenWriterRequest request;
    request.set_run("../escape");
    OpenWriterResponse response;
    auto context = NewClientContext();
    EXPECT_EQ(stub->OpenWriter(context.get(), request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }

  // Events accepted but not yet flushed (max_queue 1000, flush_secs 3600) ...
  OpenWriterRequest open;
  open.set_run("eval");
  OpenWriterResponse opened;
  {
    auto context = NewClientContext();
    ASSERT_TRUE(stub->OpenWriter(context.get(), open, &opened).ok());
  }
  {
    auto context = NewClientContext();
    WriteEventsResponse written;
    auto stream = stub->WriteEvents(context.get(), &written);
    WriteEventsRequest batch;
    batch.set_writer_id(opened.writer_id());
    for (int step = 0; step < 7; ++step) {
      Event* e = batch.add_events();
      e->set_wall_time(1700000000 + step);
      e->set_step(step);
      e->mutable_summary()->add_value()->set_tag("accuracy");
    }
    ASSERT_TRUE(stream->Write(batch));
    ASSERT_TRUE(stream->WritesDone());
    ASSERT_TRUE(stream->Finish().ok());
    EXPECT_EQ(written.events_written(), 7);
  }
  const std::string eval_file = logdir + "/" + opened.file();
  EXPECT_EQ(ReadEventFile(FileSystem::Posix(), eval_file)->size(), 1u);

  // Metrics name what happened.
  auto metrics = test::HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_event_writer_events_written_total 57"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_event_writer_files_open 1"));
  EXPECT_TRUE(absl::StrContains(
      *metrics, "overseer_event_writer_rpc_latency_seconds_count{method=\"WriteEvents\"} "));
  // The refused run is counted by method and code (and the client's own check may
  // have refused the first one before any call).
  const std::string refused =
      "overseer_event_writer_rpc_errors_total{code=\"INVALID_ARGUMENT\",method=\"OpenWriter\"} ";
  EXPECT_TRUE(absl::StrContains(*metrics, refused + "1\n") ||
              absl::StrContains(*metrics, refused + "2\n"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics,
                                "overseer_event_writer_rpc_errors_total{code=\"NOT_FOUND\","
                                "method=\"WriteEvents\"} 0\n"));

  // ... are in the file after SIGTERM, and the server exits 0.
  EXPECT_EQ(server.Terminate(), 0) << server.log();
  auto eval_events = ReadEventFile(FileSystem::Posix(), eval_file);
  ASSERT_TRUE(eval_events.ok()) << eval_events.status();
  ASSERT_EQ(eval_events->size(), 8u);
  EXPECT_EQ((*eval_events)[7].step(), 6);
  EXPECT_TRUE(absl::StrContains(server.log(), "every event file flushed and closed"));
}

}  // namespace
}  // namespace overseer
