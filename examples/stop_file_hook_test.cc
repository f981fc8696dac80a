#include "examples/stop_file_hook.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "client/training/hooked_session.h"
#include "gtest/gtest.h"

namespace overseer {
namespace examples {
namespace {

// A global step, a train op adding 1 to it, and a session over them.
struct Model {
  Model() {
    global_step = *GetOrCreateGlobalStep(root);
    train = Operation(
        ops::AssignAdd(root.WithOpName("train").WithControlDependencies(global_step.value),
                       global_step.ref, int64_t{1})
            .node());
    session = *ClientSession::Create(root);
    EXPECT_TRUE(session->Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr).ok());
  }
  Scope root = Scope::NewRootScope();
  Variable global_step;
  Operation train;
  std::unique_ptr<ClientSession> session;
};

std::string StopFile(const std::string& name) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::remove(path.c_str());
  return path;
}

void Write(const std::string& path, const std::string& content) { std::ofstream(path) << content; }

TEST(StopFileHookTest, TrainsOnUntilTheFileNamesAStepThenStopsThere) {
  Model m;
  const std::string path = StopFile("stop_at");
  StopFileHook hook(path);
  ASSERT_TRUE(hook.Begin(m.root).ok());
  HookedSession session(m.session.get(), {&hook});
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(session.Run({}, {}, {m.train}, nullptr).ok());
    EXPECT_FALSE(session.ShouldStop());
  }
  EXPECT_EQ(hook.last_step(), -1);
  Write(path, "25\n");
  int runs = 20;
  while (!session.ShouldStop() && runs < 100) {
    ASSERT_TRUE(session.Run({}, {}, {m.train}, nullptr).ok());
    ++runs;
  }
  EXPECT_EQ(hook.last_step(), 25);
  EXPECT_EQ(runs, 25);  // Stopped once the global step reached 25.
}

TEST(StopFileHookTest, AStepAlreadyPassedStopsAtTheNextRun) {
  Model m;
  const std::string path = StopFile("passed");
  StopFileHook hook(path);
  ASSERT_TRUE(hook.Begin(m.root).ok());
  HookedSession session(m.session.get(), {&hook});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(session.Run({}, {}, {m.train}, nullptr).ok());
  Write(path, "2");
  ASSERT_TRUE(session.Run({}, {}, {m.train}, nullptr).ok());  // Reads the file.
  ASSERT_TRUE(session.Run({}, {}, {m.train}, nullptr).ok());
  EXPECT_TRUE(session.ShouldStop());
}

TEST(StopFileHookTest, AFileWithoutAStepIsNamedInTheError) {
  Model m;
  const std::string path = StopFile("garbage");
  Write(path, "soon");
  StopFileHook hook(path);
  ASSERT_TRUE(hook.Begin(m.root).ok());
  HookedSession session(m.session.get(), {&hook});
  absl::Status s = session.Run({}, {}, {m.train}, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), path)) << s;
}

TEST(StopFileHookTest, NeedsAGlobalStep) {
  StopFileHook hook(StopFile("none"));
  EXPECT_TRUE(absl::IsFailedPrecondition(hook.Begin(Scope::NewRootScope())));
}

}  // namespace
}  // namespace examples
}  // namespace overseer
