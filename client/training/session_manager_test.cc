#include "client/training/session_manager.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/session/readiness.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

// A FakeClock that records every SleepFor and runs a hook after it (to change
// the world while a waiter sleeps).
class HookClock : public test::FakeClock {
 public:
  void SleepFor(absl::Duration d) override {
    FakeClock::SleepFor(d);
    std::function<void(int)> hook;
    int n;
    {
      absl::MutexLock lock(&mu_);
      sleeps_.push_back(d);
      n = static_cast<int>(sleeps_.size());
      hook = hook_;
    }
    if (hook) hook(n);
  }
  // Called with the number of sleeps so far after each one.
  void SetHook(std::function<void(int)> hook) {
    absl::MutexLock lock(&mu_);
    hook_ = std::move(hook);
  }
  std::vector<absl::Duration> sleeps() {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }

 private:
  absl::Mutex mu_;
  std::vector<absl::Duration> sleeps_ ABSL_GUARDED_BY(mu_);
  std::function<void(int)> hook_ ABSL_GUARDED_BY(mu_);
};

// A readiness channel whose waits move the manual clock instead of blocking.
class FakeChannel : public ReadinessChannel {
 public:
  enum class Mode {
    kLostRecord,   // Waits time out: the master has no record.
    kUnavailable,  // The master cannot be reached.
    kAlwaysReady,  // A stale record says ready.
  };
  FakeChannel(Mode mode, test::FakeClock *clock) : mode_(mode), clock_(clock) {}

  // Recorded as "key", or "key [filter,...]" with device filters.
  absl::Status MarkReady(const std::string &key,
                         const std::vector<std::string> &device_filters) override {
    absl::MutexLock lock(&mu_);
    marks_.push_back(device_filters.empty()
                         ? key
                         : absl::StrCat(key, " [", absl::StrJoin(device_filters, ","), "]"));
    return absl::OkStatus();
  }
  absl::Status WithdrawReady(const std::string &key) override {
    absl::MutexLock lock(&mu_);
    withdrawals_.push_back(key);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> WaitForReady(const std::string & /*key*/, absl::Duration timeout) override {
    {
      absl::MutexLock lock(&mu_);
      waits_.push_back(timeout);
    }
    switch (mode_) {
      case Mode::kLostRecord:
        clock_->Advance(timeout);
        return false;
      case Mode::kUnavailable:
        return absl::UnavailableError("master 127.0.0.1:1 unreachable");
      case Mode::kAlwaysReady:
        return true;
    }
    return false;
  }

  std::vector<absl::Duration> waits() {
    absl::MutexLock lock(&mu_);
    return waits_;
  }
  std::vector<std::string> marks() {
    absl::MutexLock lock(&mu_);
    return marks_;
  }
  std::vector<std::string> withdrawals() {
    absl::MutexLock lock(&mu_);
    return withdrawals_;
  }

 private:
  const Mode mode_;
  test::FakeClock *const clock_;
  absl::Mutex mu_;
  std::vector<absl::Duration> waits_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> marks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> withdrawals_ ABSL_GUARDED_BY(mu_);
};

// Sessions created through "count://" (DirectSessions), to see how many a call
// opens.
std::atomic<int> sessions_created{0};
const bool kCountingRegistered = [] {
  RegisterSessionFactory("count://", [](const SessionOptions &options) {
    ++sessions_created;
    SessionOptions direct = options;
    direct.target = "";
    return NewSession(direct);
  });
  return true;
}();

class SessionManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  // Options whose sessions use `resources` and whose clock is clock_.
  SessionManagerOptions Options(ResourceMgr *resources) {
    SessionManagerOptions options;
    options.session_options.resource_mgr = resources;
    options.clock = &clock_;
    return options;
  }
  std::unique_ptr<SessionManager> Manager(const Scope &root, SessionManagerOptions options) {
    absl::StatusOr<std::unique_ptr<SessionManager>> m = SessionManager::Create(root, options);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : nullptr;
  }
  std::unique_ptr<Saver> NewSaver(const Scope &root, std::vector<Variable> vars) {
    SaverOptions options;
    options.var_list = std::move(vars);
    absl::StatusOr<std::unique_ptr<Saver>> saver = Saver::Create(root, options);
    EXPECT_TRUE(saver.ok()) << saver.status();
    return saver.ok() ? std::move(*saver) : nullptr;
  }
  static bool IsInitialized(const Scope &root, ClientSession &session, const Variable &v) {
    std::vector<Tensor> out;
    absl::Status s = session.Run({ops::IsVariableInitialized(root, v.ref)}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() && out[0].scalar<bool>();
  }
  template <typename T>
  static T Value(ClientSession &session, const Variable &v) {
    std::vector<Tensor> out;
    absl::Status s = session.Run({v.value}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0].flat<T>()(0) : T();
  }
  // Whether `key` is marked ready in the in-process table of `resources`.
  static bool MarkedReady(ResourceMgr *resources, const std::string &key = "model") {
    auto channel = NewReadinessChannel("", Clock::Real(), resources);
    return *(*channel)->WaitForReady(key, absl::ZeroDuration());
  }

  HookClock clock_;
  std::string dir_;
};

TEST_F(SessionManagerTest, PrepareSessionSucceeds) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f});
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto manager = Manager(root, options);
  PrepareSessionOptions prepare;
  prepare.init_op = GlobalVariablesInitializer(root);
  EXPECT_FALSE(MarkedReady(&resources));
  auto session = manager->PrepareSession("", prepare);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({v.value}, &out).ok());
  EXPECT_EQ(out[0].flat<float>()(2), 3.0f);
  EXPECT_TRUE(MarkedReady(&resources));
}

TEST_F(SessionManagerTest, PrepareSessionSucceedsWithInitFeedDict) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Output p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT, PartialShape({3}));
  Variable v = MakeVariable(root.WithOpName("v"), p);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto manager = Manager(root, options);
  PrepareSessionOptions prepare;
  prepare.init_op = GlobalVariablesInitializer(root);
  prepare.init_feeds = {{p, Tensor::FromVector<float>({1, 2, 3})}};
  auto session = manager->PrepareSession("", prepare);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Value<float>(**session, v), 1.0f);
}

TEST_F(SessionManagerTest, PrepareSessionSucceedsWithInitFn) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), Tensor::FromVector<int32_t>({125}));
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto manager = Manager(root, options);
  PrepareSessionOptions prepare;
  prepare.init_fn = [&](ClientSession &session) {
    return session.Run({}, {}, {v.initializer}, nullptr);
  };
  auto session = manager->PrepareSession("", prepare);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Value<int32_t>(**session, v), 125);
}

TEST_F(SessionManagerTest, PrepareSessionFailsWithoutInitialiserThenRestores) {
  const std::string ckpt = dir_ + "/ckpt";
  const std::string empty = dir_ + "/empty";
  {
    ResourceMgr resources;
    Scope root = Scope::NewRootScope();
    Variable v = MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f});
    SessionManagerOptions options = Options(&resources);
    options.ready_op = ReportUninitializedVariables(root);
    auto manager = Manager(root, options);
    auto saver = NewSaver(root, {v});
    PrepareSessionOptions prepare;
    prepare.init_op = GlobalVariablesInitializer(root);
    prepare.saver = saver.get();
    prepare.checkpoint_dir = ckpt;  // Holds no checkpoint yet: initialise.
    auto session = manager->PrepareSession("", prepare);
    ASSERT_TRUE(session.ok()) << session.status();
    EXPECT_EQ(Value<float>(**session, v), 1.0f);
    ASSERT_TRUE(saver->Save((*session)->session(), ckpt + "/prepare_session_checkpoint").ok());
  }
  // A new graph and fresh variables.
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), {6.0f, 7.0f, 8.0f});
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto manager = Manager(root, options);
  auto saver = NewSaver(root, {v});
  PrepareSessionOptions prepare;
  prepare.saver = saver.get();
  prepare.checkpoint_dir = empty;
  prepare.wait_for_checkpoint = true;
  prepare.max_wait = absl::Seconds(2);
  const absl::Time start = clock_.Now();
  auto failed = manager->PrepareSession("", prepare);
  ASSERT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("no init_op or init_fn or local_init_op was given"));
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("v on the default device"));
  // It waited max_wait for a checkpoint (one recovery_wait, cut to what was
  // left).
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(2));
  EXPECT_FALSE(MarkedReady(&resources));

  prepare.checkpoint_dir = ckpt;
  auto session = manager->PrepareSession("", prepare);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE(IsInitialized(root, **session, v));
  EXPECT_EQ(Value<float>(**session, v), 1.0f);
  EXPECT_EQ(saver->last_checkpoints().size(), 1u);
  EXPECT_TRUE(MarkedReady(&resources));
}

TEST_F(SessionManagerTest, PrepareSessionWaitsForACheckpointAtRecoveryWait) {
  const std::string ckpt = dir_ + "/ckpt";
  ResourceMgr writer_resources;
  Scope writer = Scope::NewRootScope();
  Variable wv = MakeVariable(writer.WithOpName("v"), 42);
  auto writer_saver = NewSaver(writer, {wv});
  SessionOptions writer_options;
  writer_options.resource_mgr = &writer_resources;
  auto writer_session = *ClientSession::Create(writer, writer_options);
  ASSERT_TRUE(writer_session->Run({}, {}, {wv.initializer}, nullptr).ok());

  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 100);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto manager = Manager(root, options);
  auto saver = NewSaver(root, {v});
  // The checkpoint appears during the third sleep.
  clock_.SetHook([&](int n) {
    if (n == 3) {
      ASSERT_TRUE(writer_saver->Save(writer_session->session(), ckpt + "/model.ckpt", 7).ok());
    }
  });
  PrepareSessionOptions prepare;
  prepare.saver = saver.get();
  prepare.checkpoint_dir = ckpt;
  prepare.wait_for_checkpoint = true;
  auto session = manager->PrepareSession("", prepare);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Value<int32_t>(**session, v), 42);
  EXPECT_EQ(clock_.sleeps(), std::vector<absl::Duration>(3, absl::Seconds(30)));
}

TEST_F(SessionManagerTest, PrepareSessionOfAnAlreadyReadyModelNeedsNoInitialiser) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 5);
  SessionOptions direct;
  direct.resource_mgr = &resources;
  auto other = *ClientSession::Create(root, direct);
  ASSERT_TRUE(other->Run({}, {}, {v.initializer}, nullptr).ok());
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto session = Manager(root, options)->PrepareSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Value<int32_t>(**session, v), 5);
}

// restore_only_if_not_ready, for a chief recreating its session after an error: the
// model is kept when its variables survived, and restored only when they did not.
class KeepReadyModelTest : public SessionManagerTest {
 protected:
  void SetUp() override {
    SessionManagerTest::SetUp();
    v_ = MakeVariable(root_.WithOpName("v"), 1);
    assign_ = ops::Assign(root_, v_.ref, 5);
    SessionManagerOptions options = Options(&resources_);
    options.ready_op = ReportUninitializedVariables(root_);
    manager_ = Manager(root_, options);
    saver_ = NewSaver(root_, {v_});
    prepare_.init_op = GlobalVariablesInitializer(root_);
    prepare_.saver = saver_.get();
    prepare_.checkpoint_dir = dir_;
    // The first chief initialises v = 1, checkpoints it, then trains it to 5.
    auto first = manager_->PrepareSessionWithResult("", prepare_);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->kept_ready_model);
    EXPECT_FALSE(first->restored_checkpoint.has_value());
    ASSERT_TRUE(saver_->Save(first->session->session(), dir_ + "/model.ckpt", 1).ok());
    ASSERT_TRUE(first->session->Run({}, {}, {Operation(assign_.node())}, nullptr).ok());
    // Forget the first chief's mark, so that the tests see whether the next one marks.
    ASSERT_TRUE(
        (*NewReadinessChannel("", Clock::Real(), &resources_))->WithdrawReady("model").ok());
  }

  ResourceMgr resources_;
  Scope root_ = Scope::NewRootScope();
  Variable v_;
  Output assign_;
  std::unique_ptr<SessionManager> manager_;
  std::unique_ptr<Saver> saver_;
  PrepareSessionOptions prepare_;
};

TEST_F(KeepReadyModelTest, AReadyModelIsKeptAndMarkedReady) {
  prepare_.restore_only_if_not_ready = true;
  auto fresh_saver = NewSaver(root_, {v_});  // A restarted chief's: its list is empty.
  prepare_.saver = fresh_saver.get();
  auto again = manager_->PrepareSessionWithResult("", prepare_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->kept_ready_model);
  EXPECT_FALSE(again->restored_checkpoint.has_value());
  EXPECT_EQ(Value<int32_t>(*again->session, v_), 5);  // No step lost.
  EXPECT_TRUE(MarkedReady(&resources_));
  // As after a restore, the saver's retention list holds the checkpoints there.
  EXPECT_EQ(fresh_saver->last_checkpoints(), (std::vector<std::string>{dir_ + "/model.ckpt-1"}));
}

TEST_F(KeepReadyModelTest, AModelThatLostItsStateIsRestored) {
  resources_.Clear();  // The ps lost its variables.
  prepare_.restore_only_if_not_ready = true;
  auto again = manager_->PrepareSessionWithResult("", prepare_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->kept_ready_model);
  ASSERT_TRUE(again->restored_checkpoint.has_value());
  EXPECT_EQ(*again->restored_checkpoint, dir_ + "/model.ckpt-1");
  EXPECT_EQ(Value<int32_t>(*again->session, v_), 1);
  EXPECT_TRUE(MarkedReady(&resources_));
}

TEST_F(KeepReadyModelTest, WithoutTheOptionTheCheckpointIsRestoredAsTensorFlowDoes) {
  auto again = manager_->PrepareSessionWithResult("", prepare_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->kept_ready_model);
  EXPECT_TRUE(again->restored_checkpoint.has_value());
  EXPECT_EQ(Value<int32_t>(*again->session, v_), 1);
}

TEST_F(SessionManagerTest, RestoreFromACheckpointFilePath) {
  std::string path;
  {
    ResourceMgr resources;
    Scope root = Scope::NewRootScope();
    Variable v = MakeVariable(root.WithOpName("v"), 3);
    auto saver = NewSaver(root, {v});
    SessionManagerOptions options = Options(&resources);
    options.ready_op = ReportUninitializedVariables(root);
    PrepareSessionOptions prepare;
    prepare.init_op = GlobalVariablesInitializer(root);
    auto session = Manager(root, options)->PrepareSession("", prepare);
    ASSERT_TRUE(session.ok()) << session.status();
    auto saved = saver->Save((*session)->session(), dir_ + "/model.ckpt", 11);
    ASSERT_TRUE(saved.ok()) << saved.status();
    path = *saved;
  }
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 100);
  auto saver = NewSaver(root, {v});
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto manager = Manager(root, options);
  RecoverSessionOptions recover;
  recover.saver = saver.get();
  recover.checkpoint_filename_with_path = path;
  auto recovered = manager->RecoverSession("", recover);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_TRUE(recovered->initialized);
  EXPECT_EQ(Value<int32_t>(*recovered->session, v), 3);

  recover.checkpoint_dir = dir_;  // Both: an error, as in TensorFlow.
  EXPECT_EQ(manager->RecoverSession("", recover).status().code(),
            absl::StatusCode::kInvalidArgument);
  recover.checkpoint_dir.clear();
  recover.checkpoint_filename_with_path = dir_ + "/model.ckpt-99";
  EXPECT_EQ(manager->RecoverSession("", recover).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SessionManagerTest, RecoverSession) {
  {
    ResourceMgr resources;
    Scope root = Scope::NewRootScope();
    Variable v = MakeVariable(root.WithOpName("v"), 1);
    SessionManagerOptions options = Options(&resources);
    options.ready_op = ReportUninitializedVariables(root);
    auto saver = NewSaver(root, {v});
    RecoverSessionOptions recover;
    recover.saver = saver.get();
    recover.checkpoint_dir = dir_;
    auto recovered = Manager(root, options)->RecoverSession("", recover);
    ASSERT_TRUE(recovered.ok()) << recovered.status();
    EXPECT_FALSE(recovered->initialized);
    EXPECT_FALSE(MarkedReady(&resources));
    ASSERT_TRUE(recovered->session->Run({}, {}, {v.initializer}, nullptr).ok());
    EXPECT_EQ(Value<int32_t>(*recovered->session, v), 1);
    ASSERT_TRUE(
        saver->Save(recovered->session->session(), dir_ + "/recover_session_checkpoint").ok());
  }
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 2);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto saver = NewSaver(root, {v});
  RecoverSessionOptions recover;
  recover.saver = saver.get();
  recover.checkpoint_dir = dir_;
  auto recovered = Manager(root, options)->RecoverSession("", recover);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_TRUE(recovered->initialized);
  EXPECT_TRUE(IsInitialized(root, *recovered->session, v));
  EXPECT_EQ(Value<int32_t>(*recovered->session, v), 1);
  EXPECT_TRUE(MarkedReady(&resources));
}

TEST_F(SessionManagerTest, ReadyForLocalInitOpWithoutLocalInitOpIsAnError) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("v"), 1);
  SessionManagerOptions options;
  options.ready_for_local_init_op = ReportUninitializedVariables(root);
  auto manager = SessionManager::Create(root, options);
  EXPECT_EQ(manager.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(manager.status().message()),
              HasSubstr("If you pass a ready_for_local_init_op you must also pass a "
                        "local_init_op"));
}

TEST_F(SessionManagerTest, OpsOfAnotherGraphAreRejected) {
  Scope root = Scope::NewRootScope();
  Scope other = Scope::NewRootScope();
  MakeVariable(other.WithOpName("v"), 1);
  SessionManagerOptions options;
  options.ready_op = ReportUninitializedVariables(other);
  EXPECT_EQ(SessionManager::Create(root, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// v is global (restored or initialised); w is a local variable initialised from
// v.
struct LocalModel {
  Scope root = Scope::NewRootScope();
  Variable v, w;
  explicit LocalModel(int v_init) {
    v = MakeVariable(root.WithOpName("v"), v_init);
    w = MakeVariable(root.WithOpName("w"), v.value,
                     VariableOptions{false, {GraphKeys::kLocalVariables}});
  }
};

class LocalInitTest : public SessionManagerTest {
 protected:
  // Saves v = 1 into dir_.
  void SaveCheckpointOfV() {
    ResourceMgr resources;
    Scope root = Scope::NewRootScope();
    Variable v = MakeVariable(root.WithOpName("v"), 1);
    auto saver = NewSaver(root, {v});
    SessionOptions direct;
    direct.resource_mgr = &resources;
    auto session = *ClientSession::Create(root, direct);
    ASSERT_TRUE(session->Run({}, {}, {v.initializer}, nullptr).ok());
    ASSERT_TRUE(saver->Save(session->session(), dir_ + "/recover_session_checkpoint").ok());
  }
  // ready_op: both variables; ready_for_local_init_op: `ready_for_local` (null:
  // none).
  SessionManagerOptions LocalOptions(LocalModel &m, ResourceMgr *resources,
                                     std::vector<Variable> ready_for_local, bool check) {
    SessionManagerOptions options = Options(resources);
    options.ready_op = ReportUninitializedVariables(m.root, {m.v, m.w});
    if (check) {
      options.ready_for_local_init_op =
          ReportUninitializedVariables(m.root.WithOpName("report_for_local"), ready_for_local);
    }
    options.local_init_op = m.w.initializer;
    return options;
  }
};

// TensorFlow's local_init_run_options: a local init that blocks (a dequeue from an
// empty queue) ends at its RunOptions' timeout instead of hanging the trainer.
TEST_F(LocalInitTest, LocalInitRunsWithItsRunOptions) {
  ResourceMgr resources;
  LocalModel m(2);
  SessionManagerOptions options = LocalOptions(m, &resources, {m.v}, true);
  Output queue = ops::FIFOQueue(m.root.WithOpName("never_filled"), {DT_FLOAT});
  options.local_init_op = Operation(ops::QueueDequeue(m.root, queue, {DT_FLOAT})[0].node());
  options.local_init_run_options.set_timeout_in_ms(100);
  auto manager = Manager(m.root, options);
  PrepareSessionOptions prepare;
  prepare.init_op = Operation(m.v.initializer);
  auto session = manager->PrepareSession("", prepare);
  ASSERT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded) << session.status();
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("running local_init_op"));
}

TEST_F(LocalInitTest, RecoverSessionWithReadyForLocalInitOp) {
  SaveCheckpointOfV();
  ResourceMgr resources;
  LocalModel m(2);
  auto manager = Manager(m.root, LocalOptions(m, &resources, {m.v}, true));
  auto saver = NewSaver(m.root, {m.v});
  RecoverSessionOptions recover;
  recover.saver = saver.get();
  recover.checkpoint_dir = dir_;
  auto recovered = manager->RecoverSession("", recover);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_TRUE(recovered->initialized);
  EXPECT_TRUE(IsInitialized(m.root, *recovered->session, m.v));
  EXPECT_TRUE(IsInitialized(m.root, *recovered->session, m.w));
  EXPECT_EQ(Value<int32_t>(*recovered->session, m.v), 1);
  EXPECT_EQ(Value<int32_t>(*recovered->session, m.w), 1);
}

TEST_F(LocalInitTest, RecoverSessionWithReadyForLocalInitOpFailsToReadyLocal) {
  SaveCheckpointOfV();
  ResourceMgr resources;
  LocalModel m(2);
  // Ready for local init only when w is initialised too: local init never runs.
  auto manager = Manager(m.root, LocalOptions(m, &resources, {m.v, m.w}, true));
  auto saver = NewSaver(m.root, {m.v});
  RecoverSessionOptions recover;
  recover.saver = saver.get();
  recover.checkpoint_dir = dir_;
  auto recovered = manager->RecoverSession("", recover);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_FALSE(recovered->initialized);
  EXPECT_TRUE(IsInitialized(m.root, *recovered->session, m.v));
  EXPECT_FALSE(IsInitialized(m.root, *recovered->session, m.w));
  EXPECT_EQ(Value<int32_t>(*recovered->session, m.v), 1);
  EXPECT_FALSE(MarkedReady(&resources));
}

TEST_F(LocalInitTest, RecoverSessionNoCheckpointStillRunsLocalInitOp) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable w =
      MakeVariable(root.WithOpName("w"), 1, VariableOptions{false, {GraphKeys::kLocalVariables}});
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  options.local_init_op = w.initializer;
  auto recovered = Manager(root, options)->RecoverSession("");
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_FALSE(recovered->initialized);
  EXPECT_TRUE(IsInitialized(root, *recovered->session, w));
  EXPECT_EQ(Value<int32_t>(*recovered->session, w), 1);
}

TEST_F(LocalInitTest, RecoverSessionFailsStillRunsLocalInitOp) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 2);
  Variable w =
      MakeVariable(root.WithOpName("w"), 1, VariableOptions{false, {GraphKeys::kLocalVariables}});
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  options.local_init_op = w.initializer;
  auto saver = NewSaver(root, {v});
  RecoverSessionOptions recover;
  recover.saver = saver.get();
  recover.checkpoint_dir = dir_;  // Empty.
  auto recovered = Manager(root, options)->RecoverSession("", recover);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_FALSE(recovered->initialized);
  EXPECT_FALSE(IsInitialized(root, *recovered->session, v));
  EXPECT_TRUE(IsInitialized(root, *recovered->session, w));
  EXPECT_EQ(Value<int32_t>(*recovered->session, w), 1);
}

TEST_F(LocalInitTest, WaitForSessionLocalInit) {
  ResourceMgr resources;  // Shared, as a server's would be.
  LocalModel m(1);
  auto manager = Manager(m.root, LocalOptions(m, &resources, {m.v}, true));
  // Another session initialises v but not w.
  SessionOptions direct;
  direct.resource_mgr = &resources;
  auto other = *ClientSession::Create(m.root, direct);
  ASSERT_TRUE(other->Run({}, {}, {m.v.initializer}, nullptr).ok());
  auto session = manager->WaitForSession("", absl::Seconds(3));
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE(IsInitialized(m.root, **session, m.v));
  EXPECT_TRUE(IsInitialized(m.root, **session, m.w));
  EXPECT_EQ(Value<int32_t>(**session, m.w), 1);
}

TEST_F(LocalInitTest, WaitForSessionWithReadyForLocalInitOpFailsToReadyLocal) {
  ResourceMgr resources;
  LocalModel m(1);
  SessionManagerOptions options = LocalOptions(m, &resources, {m.v, m.w}, true);
  FakeChannel channel(FakeChannel::Mode::kLostRecord, &clock_);
  options.readiness_channel = &channel;
  auto session = Manager(m.root, options)->WaitForSession("", absl::Seconds(3));
  ASSERT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(session.status().message()),
              HasSubstr("Model not ready for local init: Variables not initialized: v, w"));
}

TEST_F(LocalInitTest, WaitForSessionInsufficientReadyForLocalInitCheck) {
  ResourceMgr resources;
  LocalModel m(1);
  auto manager = Manager(m.root, LocalOptions(m, &resources, {}, false));
  auto session = manager->WaitForSession("", absl::Seconds(3));
  ASSERT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(session.status().message()),
              HasSubstr("Attempting to use uninitialized value v"));
}

TEST_F(LocalInitTest, PrepareSessionWithReadyForLocalInitOp) {
  ResourceMgr resources;
  LocalModel m(1);
  auto manager = Manager(m.root, LocalOptions(m, &resources, {m.v}, true));
  PrepareSessionOptions prepare;
  prepare.init_op = m.v.initializer;
  auto session = manager->PrepareSession("", prepare);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE(IsInitialized(m.root, **session, m.v));
  EXPECT_TRUE(IsInitialized(m.root, **session, m.w));
  EXPECT_EQ(Value<int32_t>(**session, m.w), 1);
}

// The mark covers the tasks the session sees: its config's device filters.
TEST_F(LocalInitTest, PrepareSessionMarksReadyOverTheSessionsDeviceFilters) {
  ResourceMgr resources;
  LocalModel m(1);
  SessionManagerOptions options = LocalOptions(m, &resources, {m.v}, true);
  FakeChannel channel(FakeChannel::Mode::kLostRecord, &clock_);
  options.readiness_channel = &channel;
  PrepareSessionOptions prepare;
  prepare.init_op = m.v.initializer;
  ConfigProto config;
  config.add_device_filters("/job:localhost");
  prepare.config = config;
  auto session = Manager(m.root, options)->PrepareSession("", prepare);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(channel.marks(), (std::vector<std::string>{"model [/job:localhost]"}));
}

TEST_F(LocalInitTest, PrepareSessionDidNotInitLocalVariable) {
  ResourceMgr resources;
  LocalModel m(1);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(m.root, {m.v, m.w});
  FakeChannel channel(FakeChannel::Mode::kLostRecord, &clock_);
  options.readiness_channel = &channel;
  PrepareSessionOptions prepare;
  prepare.init_op = m.v.initializer;
  auto session = Manager(m.root, options)->PrepareSession("", prepare);
  ASSERT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(session.status().message()),
              HasSubstr("Init operations did not make model ready"));
  EXPECT_THAT(std::string(session.status().message()),
              HasSubstr("Variables not initialized: w on the default device"));
  EXPECT_TRUE(channel.marks().empty());
  EXPECT_EQ(channel.withdrawals(), std::vector<std::string>{"model"});
}

TEST_F(LocalInitTest, PrepareSessionWithReadyNotReadyForLocal) {
  ResourceMgr resources;
  LocalModel m(1);
  auto manager = Manager(m.root, LocalOptions(m, &resources, {m.v}, true));
  auto session = manager->PrepareSession("");
  ASSERT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(session.status().message()),
              HasSubstr("Init operations did not make model ready for local_init"));
}

TEST_F(LocalInitTest, PrepareSessionWithInsufficientReadyForLocalInitCheck) {
  ResourceMgr resources;
  LocalModel m(1);
  auto manager = Manager(m.root, LocalOptions(m, &resources, {}, false));
  auto session = manager->PrepareSession("");
  ASSERT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(session.status().message()),
              HasSubstr("Attempting to use uninitialized value v"));
}

// ---- WaitForSession: readiness long-poll, fallback and the reason on timeout
// ----

TEST_F(SessionManagerTest, WaitForSessionTimesOutNamingVariablesAndTasks) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithDevice("/job:ps/replica:0/task:0/device:CPU:0").WithOpName("v"), 1);
  MakeVariable(root.WithDevice("/job:ps/task:1").WithOpName("b"), 1);
  MakeVariable(root.WithDevice("/job:ps/task:0").WithOpName("w"), 1);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  test::FakeClock clock(test::FakeClock::Mode::kAutoAdvance);  // The wait times out at once.
  options.clock = &clock;
  auto session = Manager(root, options)->WaitForSession("", absl::Milliseconds(300));
  ASSERT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(session.status().message(),
            "Session was not ready after waiting 300ms on the in-process "
            "target: Variables "
            "not initialized: v, w on /job:ps/task:0; b on /job:ps/task:1");
}

TEST_F(SessionManagerTest, WaitForSessionWhenTheRecordIsLostPollsWithCappedBackoff) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("v"), 1);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  FakeChannel channel(FakeChannel::Mode::kLostRecord, &clock_);
  options.readiness_channel = &channel;
  const absl::Time start = clock_.Now();
  auto session = Manager(root, options)->WaitForSession("", absl::Seconds(12));
  ASSERT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(12));
  const std::vector<absl::Duration> expected = {absl::Milliseconds(100),  absl::Milliseconds(200),
                                                absl::Milliseconds(400),  absl::Milliseconds(800),
                                                absl::Milliseconds(1600), absl::Milliseconds(3200),
                                                absl::Seconds(5),         absl::Milliseconds(700)};
  EXPECT_EQ(channel.waits(), expected);
}

TEST_F(SessionManagerTest, WaitForSessionFallsBackToPollingWhenTheChannelFails) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 7);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  FakeChannel channel(FakeChannel::Mode::kUnavailable, &clock_);
  options.readiness_channel = &channel;
  // Initialised (without a readiness mark) during the third wait.
  SessionOptions direct;
  direct.resource_mgr = &resources;
  auto chief = *ClientSession::Create(root, direct);
  clock_.SetHook([&](int n) {
    if (n == 3) {
      ASSERT_TRUE(chief->Run({}, {}, {v.initializer}, nullptr).ok());
    }
  });
  auto session = Manager(root, options)->WaitForSession("", absl::Hours(1));
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Value<int32_t>(**session, v), 7);
  EXPECT_EQ(channel.waits().size(), 3u);
  EXPECT_EQ(clock_.sleeps(),
            (std::vector<absl::Duration>{absl::Milliseconds(100), absl::Milliseconds(200),
                                         absl::Milliseconds(400)}));
}

TEST_F(SessionManagerTest, WaitForSessionDoesNotSpinOnAStaleRecord) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("v"), 1);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  FakeChannel channel(FakeChannel::Mode::kAlwaysReady, &clock_);
  options.readiness_channel = &channel;
  auto session = Manager(root, options)->WaitForSession("", absl::Seconds(2));
  ASSERT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded);
  // Every release by the stale record is followed by a backoff sleep on the
  // clock.
  const size_t sleeps = clock_.sleeps().size();
  EXPECT_GE(sleeps, 3u);
  EXPECT_LE(channel.waits().size(), sleeps + 1);
}

TEST_F(SessionManagerTest, WaitForSessionWithoutAChannelPollsInOneSession) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 9);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  SessionOptions direct;
  direct.resource_mgr = &resources;
  auto chief = *ClientSession::Create(root, direct);
  clock_.SetHook([&](int n) {
    if (n == 5) {
      ASSERT_TRUE(chief->Run({}, {}, {v.initializer}, nullptr).ok());
    }
  });
  // "count://" has no readiness channel: the manager polls the ready op.
  sessions_created = 0;
  auto session = Manager(root, options)->WaitForSession("count://x", absl::Hours(1));
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Value<int32_t>(**session, v), 9);
  EXPECT_EQ(sessions_created.load(), 1);
  EXPECT_EQ(clock_.sleeps().size(), 5u);
}

TEST_F(SessionManagerTest, WaitForSessionIsReleasedByThePreparingChief) {
  ResourceMgr resources;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 4);
  SessionManagerOptions options = Options(&resources);
  options.ready_op = ReportUninitializedVariables(root);
  auto manager = Manager(root, options);
  absl::StatusOr<std::unique_ptr<ClientSession>> waited;
  // The readiness channel waits on the manual clock, which nothing moves: only the
  // chief's mark can release the non-chief, whether it starts waiting first or not.
  std::thread non_chief([&] { waited = manager->WaitForSession("", absl::Hours(1)); });
  PrepareSessionOptions prepare;
  prepare.init_op = GlobalVariablesInitializer(root);
  auto chief = manager->PrepareSession("", prepare);
  ASSERT_TRUE(chief.ok()) << chief.status();
  non_chief.join();
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(Value<int32_t>(**waited, v), 4);
}

TEST(DescribeVariablesByTaskTest, GroupsByTheRequestedTask) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithDevice("/job:ps/task:1/device:CPU:0").WithOpName("a"), 1);
  MakeVariable(root.WithOpName("b"), 1);
  MakeVariable(root.WithDevice("/job:ps/task:1").WithOpName("c"), 1);
  MakeVariable(root.WithDevice("/job:worker").WithOpName("d"), 1);
  EXPECT_EQ(DescribeVariablesByTask(*root.graph(), {"a", "b", "c", "d", "missing"}),
            "a, c on /job:ps/task:1; b, missing on the default device; d on "
            "/job:worker");
}

}  // namespace
}  // namespace overseer
