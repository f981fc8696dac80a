#include "client/training/profiler_hook.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>

#include "client/training/hooked_session.h"
#include "client/training/hooks_test_util.h"
#include "core/io/file_system.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

std::string ReadText(const std::string& path) {
  auto text = FileSystem::Posix()->ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

TEST(ProfilerHookTest, CreateNeedsOneIntervalAndADirectory) {
  test::FakeClock clock(absl::FromUnixSeconds(1000));
  ProfilerHookOptions options;
  options.clock = &clock;
  options.output_dir = test::TestDir();
  EXPECT_TRUE(absl::IsInvalidArgument(ProfilerHook::Create(options).status()));
  options.save_steps = 10;
  options.save_secs = absl::Seconds(1);
  EXPECT_TRUE(absl::IsInvalidArgument(ProfilerHook::Create(options).status()));
  options.save_secs.reset();
  options.output_dir.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(ProfilerHook::Create(options).status()));
}

// As TensorFlow's ProfilerHookTest: with save_steps 10, traced runs at global steps 10
// and 20 write timeline-10.json and timeline-20.json, holding the train op's node.
TEST(ProfilerHookTest, WritesATimelineEveryNSteps) {
  test::StepModel m;
  test::FakeClock clock(absl::FromUnixSeconds(1000));
  const std::string dir = test::TestDir();
  ASSERT_TRUE(FileSystem::Posix()->CreateDirs(dir).ok());
  // A leftover of a crash mid-write does not stop the hook.
  std::ofstream(dir + "/timeline-10.json.tmp") << "{\"traceEv";
  ProfilerHookOptions options;
  options.save_steps = 10;
  options.output_dir = dir;
  options.clock = &clock;
  auto hook = ProfilerHook::Create(options);
  ASSERT_TRUE(hook.ok()) << hook.status();
  ASSERT_TRUE((*hook)->Begin(m.root).ok());
  HookedSession hooked(m.session.get(), {hook->get()});
  for (int i = 0; i < 25; ++i) {
    const absl::Status s = hooked.Run({}, {}, {m.train_op}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  auto files = FileSystem::Posix()->ListDir(dir);
  ASSERT_TRUE(files.ok()) << files.status();
  std::sort(files->begin(), files->end());
  EXPECT_EQ(*files, (std::vector<std::string>{"timeline-10.json", "timeline-20.json"}));
  const std::string trace = ReadText(dir + "/timeline-20.json");
  EXPECT_EQ(trace.rfind("{\"traceEvents\":[", 0), 0u) << trace;
  EXPECT_NE(trace.find("\"name\":\"process_name\""), std::string::npos) << trace;
  EXPECT_NE(trace.find("\"name\":\"AssignAdd\",\"cat\":\"Op\",\"ph\":\"X\""), std::string::npos)
      << trace;
  EXPECT_NE(trace.find("\"args\":{\"name\":\"train_op\",\"op\":\"AssignAdd\""), std::string::npos)
      << trace;
  // FULL_TRACE: the outputs are described.
  EXPECT_NE(trace.find("\"output0\":\"int64 [] 8 bytes\""), std::string::npos) << trace;
}

TEST(ProfilerHookTest, ChromeTraceQuotesNamesAndNamesTheDevices) {
  StepStats stats;
  DeviceStepStats* dev = stats.add_dev_stats();
  dev->set_device("/job:worker/replica:0/task:1/device:CPU:0");
  NodeExecStats* ns = dev->add_node_stats();
  ns->set_node_name("a\"b\\c");
  ns->set_timeline_label("a\"b\\c = Neg(x)");
  ns->set_all_start_micros(1000);
  ns->set_all_end_rel_micros(7);
  ns->set_thread_id(3);
  const std::string trace = ChromeTraceFromStepStats(stats);
  EXPECT_NE(trace.find("\"args\":{\"name\":\"/job:worker/replica:0/task:1/device:CPU:0 Compute\"}"),
            std::string::npos)
      << trace;
  EXPECT_NE(trace.find("{\"name\":\"Neg\",\"cat\":\"Op\",\"ph\":\"X\",\"pid\":0,\"tid\":3,"
                       "\"ts\":1000,\"dur\":7,\"args\":{\"name\":\"a\\\"b\\\\c\",\"op\":\"Neg\","
                       "\"inputs\":\"x\"}}"),
            std::string::npos)
      << trace;
  EXPECT_EQ(ChromeTraceFromStepStats(StepStats()), "{\"traceEvents\":[\n]}\n");
}

}  // namespace
}  // namespace overseer
