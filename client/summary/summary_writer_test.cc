#include "client/summary/summary_writer.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/rpc/server_runner.h"
#include "gtest/gtest.h"
#include "summary_writer/event_file_reader.h"
#include "summary_writer/rpc/grpc_summary_writer_service.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

std::string TempDir(const std::string& name) {
  static int counter = 0;
  return absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name, ++counter);
}

Summary Scalar(const std::string& tag, float value) {
  Summary s;
  Summary::Value* v = s.add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return s;
}

std::vector<std::vector<Event>> ReadRun(const std::string& dir) {
  std::vector<std::vector<Event>> files;
  auto names = ListEventFiles(FileSystem::Posix(), dir);
  EXPECT_TRUE(names.ok()) << names.status();
  for (const auto& name : *names) {
    auto events = ReadEventFile(FileSystem::Posix(), dir + "/" + name);
    EXPECT_TRUE(events.ok()) << events.status();
    files.push_back(*events);
  }
  return files;
}

// Writes the same session through `logdir`: a graph, a START, scalars, a restart at
// step 5 with more scalars, a checkpoint log.
void WriteTrainingRun(const std::string& logdir, Clock* clock) {
  SummaryWriterOptions options;
  options.clock = clock;
  options.background_flush = false;
  auto writer = SummaryWriter::Create(logdir, options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  GraphDef graph;
  NodeDef* node = graph.add_node();
  node->set_name("x");
  node->set_op("Const");
  ASSERT_TRUE((*writer)->AddGraph(graph).ok());
  ASSERT_TRUE((*writer)->AddSessionLog(SessionLog::START, 0).ok());
  for (int step = 0; step < 10; ++step) {
    ASSERT_TRUE((*writer)->AddSummary(Scalar("loss", step), step).ok());
  }
  ASSERT_TRUE((*writer)->AddSessionLog(SessionLog::START, 5).ok());
  for (int step = 5; step < 8; ++step) {
    ASSERT_TRUE((*writer)->AddSummary(Scalar("loss", 100 + step).SerializeAsString(), step).ok());
  }
  ASSERT_TRUE((*writer)->AddSessionLog(SessionLog::CHECKPOINT, 7, "/ckpt/model.ckpt-7").ok());
  ASSERT_TRUE((*writer)->Flush().ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->AddSummary(Scalar("loss", 0), 0)));
}

void CheckTrainingRun(const std::string& dir) {
  std::vector<std::vector<Event>> files = ReadRun(dir);
  ASSERT_EQ(files.size(), 2u);
  const std::vector<Event>& first = files[0];
  ASSERT_EQ(first.size(), 1u + 1u + 1u + 10u);
  EXPECT_EQ(first[0].file_version(), "brain.Event:2");
  GraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(first[1].graph_def()));
  EXPECT_EQ(graph.node(0).name(), "x");
  EXPECT_EQ(first[2].session_log().status(), SessionLog::START);
  EXPECT_EQ(first[12].summary().value(0).simple_value(), 9.0f);
  EXPECT_DOUBLE_EQ(first[12].wall_time(), 1700000000.0);
  const std::vector<Event>& second = files[1];
  ASSERT_EQ(second.size(), 1u + 1u + 3u + 1u);
  EXPECT_EQ(second[1].session_log().status(), SessionLog::START);
  EXPECT_EQ(second[1].step(), 5);
  EXPECT_EQ(second[2].step(), 5);
  EXPECT_EQ(second[2].summary().value(0).simple_value(), 105.0f);
  EXPECT_EQ(second[5].session_log().status(), SessionLog::CHECKPOINT);
  EXPECT_EQ(second[5].session_log().checkpoint_path(), "/ckpt/model.ckpt-7");
}

TEST(SummaryWriterTest, EmbeddedRunWithRestart) {
  test::FakeClock clock;
  const std::string dir = TempDir("embedded");
  WriteTrainingRun(dir, &clock);
  CheckTrainingRun(dir);
}

TEST(SummaryWriterTest, RemoteRunWithRestartLooksTheSame) {
  const std::string logdir = TempDir("remote");
  SummaryWriterServiceOptions service_options;
  service_options.logdir = logdir;
  EventWriterEnv env;
  env.clock = Clock::Real();
  SummaryWriterServiceImpl impl(service_options, env, nullptr);
  GrpcSummaryWriterService service(&impl);
  ServerRunnerOptions runner_options;
  runner_options.component = "summary_writer";
  runner_options.host = "127.0.0.1";
  runner_options.metrics_port = -1;
  runner_options.handle_signals = false;
  ServerRunner runner(runner_options);
  runner.AddService(&service);
  ASSERT_TRUE(runner.Start().ok());
  test::FakeClock clock;
  WriteTrainingRun(absl::StrCat("grpc://", runner.address(), "/exp/train"), &clock);
  CheckTrainingRun(logdir + "/exp/train");
}

// A grpc:// logdir whose server is no summary writer (gRPC answers UNIMPLEMENTED with
// no detail) fails FAILED_PRECONDITION saying so.
TEST(SummaryWriterTest, AServerThatIsNoSummaryWriterIsNamed) {
  ServerRunnerOptions runner_options;
  runner_options.component = "checkpoint_store";
  runner_options.metrics_port = -1;
  runner_options.handle_signals = false;
  ServerRunner runner(runner_options);  // Health and reflection only.
  ASSERT_TRUE(runner.Start().ok());
  const std::string logdir = absl::StrCat("grpc://", runner.address(), "/demo");
  const absl::Status status = SummaryWriter::Create(logdir, SummaryWriterOptions()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "is not a summary writer")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), logdir)) << status;
}

TEST(SummaryWriterTest, StartStepOption) {
  const std::string dir = TempDir("resume");
  SummaryWriterOptions options;
  options.start_step = 300;
  options.background_flush = false;
  auto writer = SummaryWriter::Create(dir, options);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto files = ReadRun(dir);
  ASSERT_EQ(files.size(), 1u);
  ASSERT_EQ(files[0].size(), 2u);
  EXPECT_EQ(files[0][1].step(), 300);
}

// Writers take no lock of the SummaryWriter's own: a restart (a START after
// summaries) swapping the file under them, and Close, must still lose nothing and
// refuse cleanly.
TEST(SummaryWriterTest, ConcurrentWritesAcrossRestartsLoseNothing) {
  const std::string dir = TempDir("concurrent");
  SummaryWriterOptions options;
  options.background_flush = false;
  auto writer = SummaryWriter::Create(dir, options);
  ASSERT_TRUE(writer.ok());
  constexpr int kThreads = 4;
  constexpr int kEvents = 2000;
  constexpr int kRestarts = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEvents; ++i) {
        ASSERT_TRUE((*writer)->AddSummary(Scalar("t" + std::to_string(t), i), i).ok());
      }
    });
  }
  for (int r = 0; r < kRestarts; ++r) {
    ASSERT_TRUE((*writer)->AddSessionLog(SessionLog::START, r).ok());
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->AddSummary(Scalar("late", 1), 1)));
  // Every event of every thread is in exactly one file, each thread's in order.
  std::vector<int> next(kThreads, 0);
  for (const std::vector<Event>& file : ReadRun(dir)) {
    for (const Event& event : file) {
      if (!event.has_summary()) continue;
      const int t = event.summary().value(0).tag()[1] - '0';
      ASSERT_GE(t, 0);
      ASSERT_LT(t, kThreads);
      EXPECT_EQ(event.step(), next[t]) << "thread " << t;
      next[t] = static_cast<int>(event.step()) + 1;
    }
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kEvents) << "thread " << t;
}

TEST(SummaryWriterTest, CloseRacingWritesRefusesCleanly) {
  const std::string dir = TempDir("closing");
  SummaryWriterOptions options;
  options.background_flush = false;
  auto writer = SummaryWriter::Create(dir, options);
  ASSERT_TRUE(writer.ok());
  std::atomic<int> written{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0;; ++i) {
        const absl::Status s = (*writer)->AddSummary(Scalar("x", i), i);
        if (!s.ok()) {
          EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
          EXPECT_EQ(s.message(), "summary writer is closed");
          return;
        }
        ++written;
      }
    });
  }
  while (written.load() < 1000) std::this_thread::yield();
  ASSERT_TRUE((*writer)->Close().ok());
  for (auto& thread : threads) thread.join();
  // Every write that returned OK is in the file.
  int summaries = 0;
  for (const std::vector<Event>& file : ReadRun(dir)) {
    for (const Event& event : file) summaries += event.has_summary() ? 1 : 0;
  }
  EXPECT_EQ(summaries, written.load());
}

TEST(SummaryWriterTest, BadLogdirs) {
  for (const char* logdir :
       {"", "grpc://", "grpc://host:1", "grpc://host:1/", "grpc:///run", "grpc://host:1/../x"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(SummaryWriter::Create(logdir).status())) << logdir;
  }
  auto writer = SummaryWriter::Create(TempDir("bad"));
  ASSERT_TRUE(writer.ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->AddSummary(std::string("\xff\xff"), 1)));
}

}  // namespace
}  // namespace overseer
