#include "summary_writer/summary_writer_service.h"

#include <cstdlib>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "summary_writer/event_file_reader.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

class SummaryWriterServiceTest : public ::testing::Test {
 protected:
  SummaryWriterServiceTest() {
    static int counter = 0;
    logdir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/svc", ++counter);
    env_.clock = &clock_;
    SummaryWriterServiceOptions options;
    options.logdir = logdir_;
    service_ = std::make_unique<SummaryWriterServiceImpl>(options, env_, &registry_);
  }

  int64_t Open(const std::string& run, OpenWriterResponse* response = nullptr) {
    OpenWriterRequest request;
    request.set_run(run);
    OpenWriterResponse local;
    if (response == nullptr) response = &local;
    const absl::Status s = service_->OpenWriter(request, response);
    EXPECT_TRUE(s.ok()) << s;
    return response->writer_id();
  }

  static WriteEventsRequest Events(int64_t id, int first_step, int n) {
    WriteEventsRequest request;
    request.set_writer_id(id);
    for (int i = 0; i < n; ++i) {
      Event* e = request.add_events();
      e->set_wall_time(1700000000 + first_step + i);
      e->set_step(first_step + i);
      auto* v = e->mutable_summary()->add_value();
      v->set_tag("loss");
      v->set_simple_value(1.0f / (first_step + i + 1));
    }
    return request;
  }

  std::string Metrics() { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

  std::string logdir_;
  test::FakeClock clock_;
  EventWriterEnv env_;
  prometheus::Registry registry_;
  std::unique_ptr<SummaryWriterServiceImpl> service_;
};

TEST_F(SummaryWriterServiceTest, WritesARunDirectory) {
  OpenWriterResponse opened;
  const int64_t id = Open("exp1/train", &opened);
  EXPECT_TRUE(absl::StartsWith(opened.file(), "exp1/train/events.out.tfevents.")) << opened.file();
  ASSERT_TRUE(service_->WriteEvents(Events(id, 0, 5)).ok());
  ASSERT_TRUE(service_->WriteEvents(Events(id, 5, 5)).ok());
  FlushWriterRequest flush;
  flush.set_writer_id(id);
  FlushWriterResponse flushed;
  ASSERT_TRUE(service_->FlushWriter(flush, &flushed).ok());
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + opened.file());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 11u);
  EXPECT_EQ((*events)[10].step(), 9);
  EXPECT_EQ(service_->open_writers(), 1);

  const std::string metrics = Metrics();
  EXPECT_TRUE(absl::StrContains(metrics, "overseer_event_writer_events_written_total 10"))
      << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "overseer_event_writer_files_open 1"));
  // OpenWriter's flush of the version record, then FlushWriter's.
  EXPECT_TRUE(absl::StrContains(metrics, "overseer_event_writer_flush_duration_seconds_count 2"));
  EXPECT_TRUE(absl::StrContains(metrics, "overseer_event_writer_bytes_written_total"));
  EXPECT_FALSE(absl::StrContains(metrics, "_summary_")) << "promtool rejects such names";

  CloseWriterRequest close;
  close.set_writer_id(id);
  CloseWriterResponse closed;
  ASSERT_TRUE(service_->CloseWriter(close, &closed).ok());
  EXPECT_EQ(service_->open_writers(), 0);
  EXPECT_TRUE(absl::IsNotFound(service_->WriteEvents(Events(id, 10, 1)).status()));
  EXPECT_TRUE(absl::IsNotFound(service_->CloseWriter(close, &closed)));
}

TEST_F(SummaryWriterServiceTest, RejectsRunsOutsideTheLogdir) {
  for (const char* run : {"../escape", "/etc", "a/../../b", "", "a//b"}) {
    OpenWriterRequest request;
    request.set_run(run);
    OpenWriterResponse response;
    EXPECT_TRUE(absl::IsInvalidArgument(service_->OpenWriter(request, &response))) << run;
  }
  auto entries = FileSystem::Posix()->ListDir(logdir_);
  EXPECT_TRUE(!entries.ok() || entries->empty());
  OpenWriterRequest request;
  request.set_run("ok");
  request.set_max_queue(-1);
  OpenWriterResponse response;
  EXPECT_TRUE(absl::IsInvalidArgument(service_->OpenWriter(request, &response)));
}

TEST_F(SummaryWriterServiceTest, RestartWritesStartInANewFile) {
  OpenWriterResponse first;
  const int64_t id = Open("run", &first);
  ASSERT_TRUE(service_->WriteEvents(Events(id, 0, 10)).ok());
  OpenWriterRequest request;
  request.set_run("run");
  request.set_write_start(true);
  request.set_start_step(5);
  OpenWriterResponse second;
  ASSERT_TRUE(service_->OpenWriter(request, &second).ok());
  EXPECT_LT(first.file(), second.file());
  auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + second.file());
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].session_log().status(), SessionLog::START);
  EXPECT_EQ((*events)[1].step(), 5);
}

TEST_F(SummaryWriterServiceTest, FlushDueAndCloseAll) {
  OpenWriterResponse opened;
  const int64_t id = Open("run", &opened);
  ASSERT_TRUE(service_->WriteEvents(Events(id, 0, 3)).ok());
  const std::string path = logdir_ + "/" + opened.file();
  service_->FlushDue();
  EXPECT_EQ(ReadEventFile(FileSystem::Posix(), path)->size(), 1u);
  clock_.Advance(absl::Seconds(120));
  service_->FlushDue();
  EXPECT_EQ(ReadEventFile(FileSystem::Posix(), path)->size(), 4u);
  ASSERT_TRUE(service_->WriteEvents(Events(id, 3, 2)).ok());
  ASSERT_TRUE(service_->CloseAll().ok());
  EXPECT_EQ(ReadEventFile(FileSystem::Posix(), path)->size(), 6u);
  OpenWriterRequest request;
  request.set_run("late");
  OpenWriterResponse response;
  EXPECT_TRUE(absl::IsUnavailable(service_->OpenWriter(request, &response)));
}

// 2000 OpenWriter calls used to leave 2018 files open: the service caps open writers
// and closes the ones nobody used for idle_close, events flushed; the idle writer's
// client gets NOT_FOUND (and GrpcEventSink opens a new file).
TEST_F(SummaryWriterServiceTest, OpenWritersAreCappedAndIdleOnesClosed) {
  SummaryWriterServiceOptions options;
  options.logdir = logdir_;
  options.max_open_writers = 2;
  options.idle_close = absl::Minutes(10);
  service_ = std::make_unique<SummaryWriterServiceImpl>(options, env_, &registry_);
  OpenWriterResponse opened;
  const int64_t idle = Open("idle", &opened);
  const int64_t busy = Open("busy");
  ASSERT_TRUE(service_->WriteEvents(Events(idle, 0, 3)).ok());
  OpenWriterRequest third;
  third.set_run("third");
  OpenWriterResponse response;
  absl::Status refused = service_->OpenWriter(third, &response);
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "--max_open_writers")) << refused;

  clock_.Advance(absl::Minutes(6));
  ASSERT_TRUE(service_->WriteEvents(Events(busy, 0, 1)).ok());  // Keeps "busy" in use.
  clock_.Advance(absl::Minutes(6));
  service_->FlushDue();
  EXPECT_EQ(service_->open_writers(), 1);
  EXPECT_TRUE(absl::IsNotFound(service_->WriteEvents(Events(idle, 3, 1)).status()));
  EXPECT_EQ(ReadEventFile(FileSystem::Posix(), logdir_ + "/" + opened.file())->size(), 4u);
  EXPECT_TRUE(absl::StrContains(Metrics(), "overseer_event_writer_idle_closed_total 1"))
      << Metrics();
  EXPECT_TRUE(service_->OpenWriter(third, &response).ok());
}

// The flush histogram counted only FlushWriter calls: 0 after 1024 events that the
// periodic flushes had made durable. It counts every flush now.
TEST_F(SummaryWriterServiceTest, EveryFlushIsTimedNotOnlyFlushWriter) {
  OpenWriterRequest request;
  request.set_run("run");
  request.set_flush_secs(1);
  OpenWriterResponse opened;
  ASSERT_TRUE(service_->OpenWriter(request, &opened).ok());
  const std::string version_flush = "overseer_event_writer_flush_duration_seconds_count 1\n";
  EXPECT_TRUE(absl::StrContains(Metrics(), version_flush)) << Metrics();
  for (int batch = 0; batch < 128; ++batch) {
    ASSERT_TRUE(service_->WriteEvents(Events(opened.writer_id(), batch * 8, 8)).ok());
    if (batch % 16 == 15) {
      clock_.Advance(absl::Seconds(1));
      service_->FlushDue();
    }
  }
  // 1024 events, 8 periodic flushes, no FlushWriter.
  EXPECT_TRUE(absl::StrContains(Metrics(), "overseer_event_writer_events_written_total 1024\n"));
  const std::string flushes = "overseer_event_writer_flush_duration_seconds_count ";
  EXPECT_TRUE(absl::StrContains(Metrics(), flushes + "9\n")) << Metrics();
  ASSERT_TRUE(service_->WriteEvents(Events(opened.writer_id(), 1024, 1)).ok());
  ASSERT_TRUE(service_->CloseAll().ok());
  EXPECT_TRUE(absl::StrContains(Metrics(), flushes + "10\n")) << Metrics();
  EXPECT_TRUE(absl::StrContains(Metrics(), "overseer_event_writer_files_open 0\n"));
}

TEST_F(SummaryWriterServiceTest, ManyTrainersAtOnce) {
  constexpr int kTrainers = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> files(kTrainers);
  for (int t = 0; t < kTrainers; ++t) {
    threads.emplace_back([&, t] {
      OpenWriterResponse opened;
      const int64_t id = Open(absl::StrCat("run", t % 3), &opened);
      for (int b = 0; b < 20; ++b) ASSERT_TRUE(service_->WriteEvents(Events(id, b * 10, 10)).ok());
      CloseWriterRequest close;
      close.set_writer_id(id);
      CloseWriterResponse closed;
      ASSERT_TRUE(service_->CloseWriter(close, &closed).ok());
      files[t] = opened.file();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& file : files) {
    auto events = ReadEventFile(FileSystem::Posix(), logdir_ + "/" + file);
    ASSERT_TRUE(events.ok()) << events.status();
    ASSERT_EQ(events->size(), 201u);
    for (int i = 0; i < 200; ++i) EXPECT_EQ((*events)[i + 1].step(), i);
  }
}

}  // namespace
}  // namespace overseer
