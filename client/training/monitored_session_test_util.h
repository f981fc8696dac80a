#ifndef OVERSEER_CLIENT_TRAINING_MONITORED_SESSION_TEST_UTIL_H_
#define OVERSEER_CLIENT_TRAINING_MONITORED_SESSION_TEST_UTIL_H_

// What the monitored session tests share: TensorFlow's FakeHook, RaiseOnceAtCountN and
// CountingSessionCreator, a model with a fed constant and a global step, and a
// directory per test.

#include <cstdlib>
#include <filesystem>
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
#include "client/training/coordinator.h"
#include "client/training/session_creator.h"
#include "client/training/session_run_hook.h"
#include "core/resource_mgr.h"
#include "gtest/gtest.h"

namespace overseer {
namespace test {

// An empty directory under TEST_TMPDIR named after the running test.
inline std::string FreshTestDir(const std::string& suffix = "") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", info->test_suite_name(), ".",
                                 info->name(), suffix);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Counts the calls of every hook method; requests stop after a run when told; asks
// for `request` before each run.
class FakeHook : public SessionRunHook {
 public:
  absl::Status Begin(const Scope& /*scope*/) override {
    calls["begin"]++;
    order.push_back("begin");
    return absl::OkStatus();
  }
  absl::Status AfterCreateSession(ClientSession* session, Coordinator* coord) override {
    calls["after_create_session"]++;
    order.push_back("after_create_session");
    last_session = session;
    last_coord = coord;
    return absl::OkStatus();
  }
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* /*context*/) override {
    calls["before_run"]++;
    order.push_back("before_run");
    return request;
  }
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override {
    calls["after_run"]++;
    order.push_back("after_run");
    last_results = values.results;
    if (should_stop) context->RequestStop();
    return absl::OkStatus();
  }
  absl::Status End(ClientSession* /*session*/) override {
    calls["end"]++;
    order.push_back("end");
    return end_status;
  }

  std::map<std::string, int> calls;
  std::vector<std::string> order;
  SessionRunArgs request;
  bool should_stop = false;
  absl::Status end_status;
  ClientSession* last_session = nullptr;
  Coordinator* last_coord = nullptr;
  std::vector<Tensor> last_results;
};

// Fails its n-th BeforeRun, once, with `error` (after calling `before_failing`).
class RaiseOnceAtCountN : public SessionRunHook {
 public:
  RaiseOnceAtCountN(int n, absl::Status error) : n_(n), error_(std::move(error)) {}
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* /*context*/) override {
    if (--n_ == 0 && !raised) {
      raised = true;
      if (before_failing) before_failing();
      return error_;
    }
    return SessionRunArgs();
  }
  bool raised = false;
  std::function<void()> before_failing;

 private:
  int n_;
  const absl::Status error_;
};

// A creator wrapping another that counts the sessions made and can fail the next
// creations with given errors.
class CountingSessionCreator : public SessionCreator {
 public:
  explicit CountingSessionCreator(std::unique_ptr<SessionCreator> inner)
      : inner_(std::move(inner)) {}
  absl::StatusOr<std::unique_ptr<ClientSession>> CreateSession() override {
    ++attempts;
    if (!failures.empty()) {
      absl::Status error = failures.front();
      failures.erase(failures.begin());
      return error;
    }
    auto session = inner_->CreateSession();
    if (session.ok()) ++created;
    return session;
  }
  int attempts = 0;
  int created = 0;
  std::vector<absl::Status> failures;

 private:
  const std::unique_ptr<SessionCreator> inner_;
};

// A graph with a global step, a step op (assign_add 1 to it, after its read, as the
// optimizers' increment) and a constant `c` with v = identity(c) to feed; variables in
// a ResourceMgr of their own.
struct StepGraph {
  StepGraph() {
    gstep = *GetOrCreateGlobalStep(root);
    do_step = ops::AssignAdd(root.WithOpName("do_step").WithControlDependencies(gstep.value),
                             gstep.ref, int64_t{1});
    c = ops::Const(root.WithOpName("c"), 0);
    v = ops::Identity(root.WithOpName("v"), c);
  }
  // Options of a chief creator using this graph's resources.
  ChiefSessionCreatorOptions Chief(Clock* clock, const std::string& checkpoint_dir = "") {
    ChiefSessionCreatorOptions options;
    options.resource_mgr = &resources;
    options.clock = clock;
    options.checkpoint_dir = checkpoint_dir;
    return options;
  }
  static int64_t Int64(const std::vector<Tensor>& out) { return out[0].scalar<int64_t>(); }
  static int32_t Int32(const std::vector<Tensor>& out) { return out[0].scalar<int32_t>(); }
  FeedPair Feed(int32_t value) const { return {c, Tensor::Scalar(value)}; }

  Scope root = Scope::NewRootScope();
  ResourceMgr resources;
  Variable gstep;
  Output do_step;
  Output c, v;
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_MONITORED_SESSION_TEST_UTIL_H_
