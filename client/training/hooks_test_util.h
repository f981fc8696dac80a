#ifndef OVERSEER_CLIENT_TRAINING_HOOKS_TEST_UTIL_H_
#define OVERSEER_CLIENT_TRAINING_HOOKS_TEST_UTIL_H_

// What the hook tests share: a model with a global step and a train op that advances
// it, in a session with its own ResourceMgr; event files read back; the global step of
// the latest checkpoint; a clock whose SleepFor runs a callback.

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "client/training/saver.h"
#include "core/resource_mgr.h"
#include "gtest/gtest.h"
#include "proto/event.pb.h"
#include "summary_writer/event_file_reader.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace test {

// A directory under TEST_TMPDIR named after the running test, plus `suffix`.
inline std::string TestDir(const std::string& suffix = "") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return absl::StrCat(std::getenv("TEST_TMPDIR"), "/", info->test_suite_name(), ".", info->name(),
                      suffix);
}

// A graph with a global step, a train op adding `steps_per_run` to it after reading it,
// and a session of its own (variables initialised).
struct StepModel {
  explicit StepModel(int64_t steps_per_run = 1) {
    global_step = *GetOrCreateGlobalStep(root);
    // As TensorFlow's _increment_global_step: the increment waits for the step's read,
    // so a hook fetching the read with the train op sees the step before the run.
    train_op = Operation(
        ops::AssignAdd(root.WithOpName("train_op").WithControlDependencies(global_step.value),
                       global_step.ref, steps_per_run)
            .node());
    SessionOptions options;
    options.resource_mgr = &resources;
    session = *ClientSession::Create(root, options);
    Init();
  }
  void Init() {
    absl::Status s = session->Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr);
    EXPECT_TRUE(s.ok()) << s;
  }
  // Sets the global step.
  void SetStep(int64_t step) {
    Output assign = ops::Assign(root, global_step.ref, step);
    absl::Status s = session->Run({}, {}, {Operation(assign.node())}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  int64_t Step() {
    std::vector<Tensor> out;
    absl::Status s = session->Run({global_step.value}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0].scalar<int64_t>() : -1;
  }

  Scope root = Scope::NewRootScope();
  ResourceMgr resources;
  Variable global_step;
  Operation train_op;
  std::unique_ptr<ClientSession> session;
};

// The global step saved in the latest checkpoint under `location`, restored into a
// graph and session of its own; -1 (and a failure) if there is none.
inline int64_t CheckpointedStep(const std::string& location) {
  auto latest = LatestCheckpoint(location);
  if (!latest.ok() || !latest->has_value()) {
    ADD_FAILURE() << "no checkpoint in " << location;
    return -1;
  }
  StepModel model;
  auto saver = Saver::Create(model.root, {});
  EXPECT_TRUE(saver.ok()) << saver.status();
  EXPECT_TRUE(model.session->ExtendIfNeeded().ok());
  absl::Status s = (*saver)->Restore(model.session->session(), **latest);
  EXPECT_TRUE(s.ok()) << s;
  return model.Step();
}

// Every event of every event file in `dir`, in order.
inline std::vector<Event> ReadEvents(const std::string& dir) {
  std::vector<Event> events;
  auto names = ListEventFiles(FileSystem::Posix(), dir);
  EXPECT_TRUE(names.ok()) << names.status();
  if (!names.ok()) return events;
  for (const auto& name : *names) {
    auto file = ReadEventFile(FileSystem::Posix(), dir + "/" + name);
    EXPECT_TRUE(file.ok()) << file.status();
    if (file.ok()) events.insert(events.end(), file->begin(), file->end());
  }
  return events;
}

// step -> tag -> simple_value of the summaries in `dir`.
inline std::map<int64_t, std::map<std::string, float>> ReadSummaries(const std::string& dir) {
  std::map<int64_t, std::map<std::string, float>> out;
  for (const Event& e : ReadEvents(dir)) {
    if (!e.has_summary()) continue;
    for (const auto& v : e.summary().value()) out[e.step()][v.tag()] = v.simple_value();
  }
  return out;
}

// A FakeClock whose SleepFor advances time and then calls `on_sleep`.
class CallbackClock : public FakeClock {
 public:
  std::function<void()> on_sleep;
  int sleeps = 0;
  void SleepFor(absl::Duration d) override {
    FakeClock::SleepFor(d);
    ++sleeps;
    if (on_sleep) on_sleep();
  }
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_HOOKS_TEST_UTIL_H_
