#include "summary_writer/event_file_writer.h"

#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "summary_writer/event_file_reader.h"
#include "summary_writer/record.h"
#include "summary_writer/testing/fault_injecting_file_system.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

class EventFileWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/efw", ++counter);
    env_.fs = &fs_;
    env_.clock = &clock_;
    env_.hostname = "testhost";
    env_.pid = 42;
  }

  std::unique_ptr<EventFileWriter> Create(EventFileWriterOptions options = {}) {
    auto writer = EventFileWriter::Create(dir_, options, env_);
    EXPECT_TRUE(writer.ok()) << writer.status();
    return writer.ok() ? *std::move(writer) : nullptr;
  }

  std::vector<Event> Read(const std::string& path) {
    auto events = ReadEventFile(FileSystem::Posix(), path);
    EXPECT_TRUE(events.ok()) << events.status();
    return events.ok() ? *events : std::vector<Event>();
  }

  static Event Scalar(int64_t step, float value) {
    Event e;
    e.set_wall_time(1700000000.5 + step);
    e.set_step(step);
    Summary::Value* v = e.mutable_summary()->add_value();
    v->set_tag("loss");
    v->set_simple_value(value);
    return e;
  }

  std::string dir_;
  test::FakeClock clock_{absl::FromUnixSeconds(1700000000) + absl::Milliseconds(250)};
  test::FaultInjectingFileSystem fs_{FileSystem::Posix()};
  EventWriterEnv env_;
};

TEST_F(EventFileWriterTest, FileNameAndVersionRecord) {
  auto writer = Create();
  ASSERT_NE(writer, nullptr);
  const std::string name = writer->path().substr(dir_.size() + 1);
  EXPECT_TRUE(absl::StartsWith(name, "events.out.tfevents.1700000000.testhost.42.")) << name;
  // The version record is durable as soon as the writer exists.
  std::vector<Event> events = Read(writer->path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_DOUBLE_EQ(events[0].wall_time(), 1700000000.25);
  EXPECT_EQ(events[0].step(), 0);
  EXPECT_EQ(events[0].source_metadata().writer(), kEventWriterName);
  EXPECT_EQ(fs_.syncs(), 1);
}

TEST_F(EventFileWriterTest, SummaryFastPathsWriteTheSameRecordsAsWriteEvent) {
  EventFileWriterOptions options;
  options.max_queue = 3;
  auto writer = Create(options);
  ASSERT_NE(writer, nullptr);
  const Event scalar = Scalar(7, 0.5f);
  ASSERT_TRUE(writer->WriteEvent(scalar).ok());
  ASSERT_TRUE(writer->WriteSummary(scalar.wall_time(), 7, scalar.summary()).ok());
  ASSERT_TRUE(
      writer->WriteSerializedSummary(scalar.wall_time(), 7, scalar.summary().SerializeAsString())
          .ok());
  // A zero wall_time becomes the clock's time, as in WriteEvent.
  ASSERT_TRUE(writer->WriteSummary(0, 8, scalar.summary()).ok());
  ASSERT_TRUE(writer->Flush().ok());
  const std::vector<Event> events = Read(writer->path());
  ASSERT_EQ(events.size(), 5u);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(events[i].SerializeAsString(), scalar.SerializeAsString()) << i;
  }
  EXPECT_DOUBLE_EQ(events[4].wall_time(), 1700000000.25);
  EXPECT_EQ(events[4].step(), 8);
  EXPECT_EQ(events[4].summary().SerializeAsString(), scalar.summary().SerializeAsString());
}

TEST_F(EventFileWriterTest, EventFileNameFormat) {
  EXPECT_EQ(EventFileName(absl::FromUnixSeconds(12345), "h", 7, 3, ".v2"),
            "events.out.tfevents.0000012345.h.7.3.v2");
}

TEST_F(EventFileWriterTest, RoundTripsEventsInOrder) {
  auto writer = Create();
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(writer->WriteEvent(Scalar(i, i * 0.5f)).ok());
  ASSERT_TRUE(writer->Close().ok());
  std::vector<Event> events = Read(writer->path());
  ASSERT_EQ(events.size(), 26u);
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(events[i + 1].step(), i);
    EXPECT_EQ(events[i + 1].summary().value(0).simple_value(), i * 0.5f);
  }
}

TEST_F(EventFileWriterTest, FullQueueIsWrittenButNotSynced) {
  EventFileWriterOptions options;
  options.max_queue = 3;
  auto writer = Create(options);
  ASSERT_TRUE(writer->WriteEvent(Scalar(0, 1)).ok());
  ASSERT_TRUE(writer->WriteEvent(Scalar(1, 1)).ok());
  EXPECT_EQ(Read(writer->path()).size(), 1u);
  ASSERT_TRUE(writer->WriteEvent(Scalar(2, 1)).ok());
  EXPECT_EQ(Read(writer->path()).size(), 4u);
  EXPECT_EQ(fs_.syncs(), 1);  // Only the version record's.
  ASSERT_TRUE(writer->Flush().ok());
  EXPECT_EQ(fs_.syncs(), 2);
  ASSERT_TRUE(writer->Flush().ok());  // Nothing new: no sync.
  EXPECT_EQ(fs_.syncs(), 2);
}

TEST_F(EventFileWriterTest, ABatchIsWrittenWithOneAppend) {
  EventFileWriterOptions options;
  options.max_queue = 3;
  auto writer = Create(options);
  const int appends = fs_.appends();
  google::protobuf::RepeatedPtrField<Event> small;
  for (int i = 0; i < 2; ++i) *small.Add() = Scalar(i, 1);
  ASSERT_TRUE(writer->WriteEvents(small).ok());
  EXPECT_EQ(fs_.appends(), appends);  // Below max_queue: still queued.
  google::protobuf::RepeatedPtrField<Event> batch;
  for (int i = 2; i < 12; ++i) *batch.Add() = Scalar(i, 1);
  ASSERT_TRUE(writer->WriteEvents(batch).ok());
  // The 12 queued events go out in one write, not one per max_queue events.
  EXPECT_EQ(fs_.appends(), appends + 1);
  std::vector<Event> events = Read(writer->path());
  ASSERT_EQ(events.size(), 13u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(events[i + 1].step(), i);
}

TEST_F(EventFileWriterTest, FramedRecordsAreCheckedThenAppendedAsTheyAre) {
  EventFileWriterOptions options;
  options.max_queue = 3;
  auto writer = Create(options);
  std::string records;
  for (int i = 0; i < 4; ++i) AppendRecord(Scalar(i, 1).SerializeAsString(), &records);
  const int appends = fs_.appends();
  absl::StatusOr<int64_t> n = writer->WriteRecords(records);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 4);
  EXPECT_EQ(fs_.appends(), appends + 1);  // 4 >= max_queue: one write.

  // Bad messages are refused whole, naming the record; nothing of them is written.
  std::string corrupted = records;
  corrupted[corrupted.size() - 1] ^= 1;  // The last record's data CRC.
  std::string truncated = records.substr(0, records.size() - 3);
  std::string not_an_event;
  AppendRecord("\xff\xff\xff", &not_an_event);
  for (const std::string& bad : {corrupted, truncated, not_an_event}) {
    absl::StatusOr<int64_t> refused = writer->WriteRecords(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), "record ")) << refused.status();
  }
  ASSERT_TRUE(writer->Flush().ok());
  std::vector<Event> events = Read(writer->path());
  ASSERT_EQ(events.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(events[i + 1].step(), i);

  // Records are parsed on an arena reset every 64: a long message, good throughout
  // or bad near its end, is judged whole all the same.
  std::string many;
  for (int i = 0; i < 300; ++i) AppendRecord(Scalar(i, 2).SerializeAsString(), &many);
  n = writer->WriteRecords(many);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 300);
  std::string bad_tail = many;
  AppendRecord("\x2a\x05", &bad_tail);  // Event.summary (field 5) cut short.
  absl::StatusOr<int64_t> refused = writer->WriteRecords(bad_tail);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "record 300")) << refused.status();
  ASSERT_TRUE(writer->Flush().ok());
  EXPECT_EQ(Read(writer->path()).size(), 305u);
}

TEST_F(EventFileWriterTest, FlushesAfterFlushInterval) {
  EventFileWriterOptions options;
  options.flush_interval = absl::Seconds(120);
  auto writer = Create(options);
  ASSERT_TRUE(writer->WriteEvent(Scalar(0, 1)).ok());
  ASSERT_TRUE(writer->FlushIfDue().ok());
  EXPECT_EQ(Read(writer->path()).size(), 1u);
  clock_.Advance(absl::Seconds(119));
  ASSERT_TRUE(writer->FlushIfDue().ok());
  EXPECT_EQ(Read(writer->path()).size(), 1u);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(writer->FlushIfDue().ok());
  EXPECT_EQ(Read(writer->path()).size(), 2u);
  EXPECT_EQ(fs_.syncs(), 2);
  // Without FlushIfDue, the write of a full queue after the interval flushes too;
  // events are not checked one by one.
  clock_.Advance(absl::Seconds(120));
  for (int i = 1; i < options.max_queue; ++i) {
    ASSERT_TRUE(writer->WriteEvent(Scalar(i, 1)).ok());
  }
  EXPECT_EQ(Read(writer->path()).size(), 2u);
  EXPECT_EQ(fs_.syncs(), 2);
  ASSERT_TRUE(writer->WriteEvent(Scalar(options.max_queue, 1)).ok());
  EXPECT_EQ(Read(writer->path()).size(), 2u + options.max_queue);
  EXPECT_EQ(fs_.syncs(), 3);
  // Before the interval, a full queue is written but not synced.
  for (int i = 0; i < options.max_queue; ++i) {
    ASSERT_TRUE(writer->WriteEvent(Scalar(100 + i, 1)).ok());
  }
  EXPECT_EQ(Read(writer->path()).size(), 2u + 2 * options.max_queue);
  EXPECT_EQ(fs_.syncs(), 3);
}

TEST_F(EventFileWriterTest, StampsMissingWallTime) {
  auto writer = Create();
  Event e = Scalar(3, 1);
  e.set_wall_time(0);
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(writer->WriteEvent(e).ok());
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_DOUBLE_EQ(Read(writer->path())[1].wall_time(), 1700000010.25);
}

TEST_F(EventFileWriterTest, StartStepWritesSessionStart) {
  EventFileWriterOptions options;
  options.start_step = 500;
  auto writer = Create(options);
  std::vector<Event> events = Read(writer->path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step(), 500);
  EXPECT_EQ(events[1].session_log().status(), SessionLog::START);
}

TEST_F(EventFileWriterTest, NewFilesSortAfterOldOnes) {
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {  // Same second, counters 1..12 ("10" < "9" as text).
    auto writer = Create();
    names.push_back(writer->path());
  }
  for (size_t i = 1; i < names.size(); ++i) EXPECT_LT(names[i - 1], names[i]);
  // A file from another machine with a later timestamp: ours goes after it.
  {
    EventWriterEnv other = env_;
    other.hostname = "zzz";
    test::FakeClock later(absl::FromUnixSeconds(1700000500));
    other.clock = &later;
    ASSERT_TRUE(EventFileWriter::Create(dir_, {}, other).ok());
  }
  auto writer = Create();
  auto files = ListEventFiles(FileSystem::Posix(), dir_);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(dir_ + "/" + files->back(), writer->path());
  EXPECT_TRUE(absl::StrContains(writer->path(), "tfevents.1700000501.testhost"));
}

TEST_F(EventFileWriterTest, ClosedWriterRefusesEvents) {
  auto writer = Create();
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_TRUE(writer->Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(writer->WriteEvent(Scalar(0, 1))));
  EXPECT_TRUE(absl::IsFailedPrecondition(writer->Flush()));
}

TEST_F(EventFileWriterTest, BadOptions) {
  EventFileWriterOptions options;
  options.max_queue = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(EventFileWriter::Create(dir_, options, env_).status()));
  options = {};
  for (const std::string& suffix : {std::string("/x"), std::string("a\nb"), std::string("a\0b", 3),
                                    std::string("\x7f"), std::string(65, 'x')}) {
    options.filename_suffix = suffix;
    absl::Status s = EventFileWriter::Create(dir_, options, env_).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << absl::CHexEscape(suffix) << ": " << s;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s;
  }
  options.filename_suffix = ".v2-eval";
  EXPECT_TRUE(EventFileWriter::Create(dir_, options, env_).ok());
}

TEST_F(EventFileWriterTest, WriteErrorsAreStickyAndLeaveATornTailOnly) {
  auto writer = Create();
  ASSERT_TRUE(writer->WriteEvent(Scalar(0, 1)).ok());
  ASSERT_TRUE(writer->Flush().ok());
  fs_.set_fail_appends(true);
  ASSERT_TRUE(writer->WriteEvent(Scalar(1, 1)).ok());
  const absl::Status s = writer->Flush();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  fs_.set_fail_appends(false);
  EXPECT_EQ(writer->WriteEvent(Scalar(2, 1)), s);
  EXPECT_EQ(writer->Close(), s);
  // The two good records read back; then the half-written one is a truncation.
  auto contents = FileSystem::Posix()->ReadFile(writer->path());
  ASSERT_TRUE(contents.ok());
  auto events = ReadEventFile(FileSystem::Posix(), writer->path());
  EXPECT_TRUE(absl::IsDataLoss(events.status()));
  EXPECT_TRUE(absl::StrContains(events.status().message(), "truncated"));
}

TEST_F(EventFileWriterTest, SyncFailureIsReported) {
  auto writer = Create();
  fs_.set_fail_syncs(true);
  ASSERT_TRUE(writer->WriteEvent(Scalar(0, 1)).ok());
  EXPECT_TRUE(absl::IsInternal(writer->Flush()));
}

TEST_F(EventFileWriterTest, ManyConcurrentWriters) {
  constexpr int kWriters = 8;
  constexpr int kEvents = 300;
  std::vector<std::string> paths(kWriters);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto writer = EventFileWriter::Create(dir_, {}, env_);
      ASSERT_TRUE(writer.ok());
      for (int i = 0; i < kEvents; ++i) ASSERT_TRUE((*writer)->WriteEvent(Scalar(i, w)).ok());
      ASSERT_TRUE((*writer)->Close().ok());
      paths[w] = (*writer)->path();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::set<std::string>(paths.begin(), paths.end()).size(), kWriters);
  for (int w = 0; w < kWriters; ++w) {
    std::vector<Event> events = Read(paths[w]);
    ASSERT_EQ(events.size(), kEvents + 1u);
    for (int i = 0; i < kEvents; ++i) {
      EXPECT_EQ(events[i + 1].step(), i);
      EXPECT_EQ(events[i + 1].summary().value(0).simple_value(), w);
    }
  }
}

TEST_F(EventFileWriterTest, ConcurrentEventsIntoOneWriterAreWholeRecords) {
  auto writer = Create();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) ASSERT_TRUE(writer->WriteEvent(Scalar(i, t)).ok());
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(writer->Close().ok());
  std::vector<Event> events = Read(writer->path());
  EXPECT_EQ(events.size(), 1001u);
}

}  // namespace
}  // namespace overseer
