#include "client/training/supervisor.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/summary/summary_ops.h"
#include "client/training/queue_runner.h"
#include "core/io/file_system.h"
#include "core/resource_mgr.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "summary_writer/event_file_reader.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logdir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(logdir_);
  }

  // Checkpoints and events in logdir_, the manual clock, this test's variables.
  SupervisorOptions Options(ResourceMgr* resources = nullptr) {
    SupervisorOptions options;
    options.logdir = logdir_;
    options.clock = &clock_;
    options.session_options.resource_mgr = resources != nullptr ? resources : &resources_;
    options.after_service_run = [this](SupervisorService service, const absl::Status& s) {
      EXPECT_TRUE(s.ok()) << s;
      absl::MutexLock lock(&mu_);
      ++runs_[service];
    };
    return options;
  }
  std::unique_ptr<Supervisor> NewSupervisor(const Scope& root, SupervisorOptions options) {
    absl::StatusOr<std::unique_ptr<Supervisor>> sv = Supervisor::Create(root, options);
    EXPECT_TRUE(sv.ok()) << sv.status();
    return sv.ok() ? std::move(*sv) : nullptr;
  }
  // Blocks until `service` has run `n` times (not a sleep: a wait on the condition).
  void WaitForRuns(SupervisorService service, int n) {
    absl::MutexLock lock(&mu_);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return runs_[service] >= n; };
    ASSERT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(60)))
        << "service ran " << runs_[service] << " times, not " << n;
  }
  int Runs(SupervisorService service) {
    absl::MutexLock lock(&mu_);
    return runs_[service];
  }

  static std::vector<std::string> EventFiles(const std::string& dir) {
    if (!std::filesystem::exists(dir)) return {};
    auto files = ListEventFiles(FileSystem::Posix(), dir);
    EXPECT_TRUE(files.ok()) << files.status();
    std::vector<std::string> out;
    if (files.ok()) {
      for (const std::string& f : *files) out.push_back(absl::StrCat(dir, "/", f));
    }
    return out;
  }
  static std::vector<Event> ReadEvents(const std::string& path) {
    auto events = ReadEventFile(FileSystem::Posix(), path);
    EXPECT_TRUE(events.ok()) << events.status();
    return events.ok() ? *events : std::vector<Event>();
  }
  // The events of the last event file in `dir`.
  static std::vector<Event> LastEvents(const std::string& dir) {
    std::vector<std::string> files = EventFiles(dir);
    return files.empty() ? std::vector<Event>() : ReadEvents(files.back());
  }
  static std::string Summary3() {
    return "value { tag: 'c1' simple_value: 1 } value { tag: 'c2' simple_value: 2 } "
           "value { tag: 'c3' simple_value: 3 }";
  }
  static bool SummaryIs(const Event& event, const std::vector<std::pair<std::string, float>>& v) {
    if (!event.has_summary() || event.summary().value_size() != static_cast<int>(v.size())) {
      return false;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (event.summary().value(i).tag() != v[i].first ||
          event.summary().value(i).simple_value() != v[i].second) {
        return false;
      }
    }
    return true;
  }
  static bool GraphIs(const Event& event, const GraphDef& expected) {
    GraphDef graph;
    return graph.ParseFromString(event.graph_def()) &&
           google::protobuf::util::MessageDifferencer::Equals(graph, expected);
  }
  static Output Summ(const Scope& root) {
    return ops::ScalarSummary(root, Tensor::FromVector<std::string>({"c1", "c2", "c3"}),
                              Tensor::FromVector<float>({1, 2, 3}));
  }
  template <typename T>
  static T Fetch(ClientSession& session, const Output& t) {
    std::vector<Tensor> out;
    absl::Status s = session.Run({t}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0].flat<T>()(0) : T();
  }
  // Runs `outputs` for their effect (assignments).
  static absl::Status RunAll(ClientSession& session, const std::vector<Output>& outputs) {
    std::vector<Tensor> out;
    return session.Run(outputs, &out);
  }
  static std::string FetchString(ClientSession& session, const Output& t) {
    return Fetch<std::string>(session, t);
  }

  test::FakeClock clock_;
  ResourceMgr resources_;
  std::string logdir_;
  absl::Mutex mu_;
  std::map<SupervisorService, int> runs_ ABSL_GUARDED_BY(mu_);
};

TEST_F(SupervisorTest, Basics) {
  Scope root = Scope::NewRootScope();
  Output my_op = ops::Const(root, 1.0f);
  auto sv = NewSupervisor(root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Fetch<float>(**session, my_op), 1.0f);
  EXPECT_TRUE(sv->Stop().ok());
  EXPECT_TRUE((*session)->Close().ok());
}

TEST_F(SupervisorTest, ManagedSession) {
  Scope root = Scope::NewRootScope();
  Output my_op = ops::Const(root, 1.0f);
  auto sv = NewSupervisor(root, Options());
  {
    auto managed = sv->ManagedSession("");
    ASSERT_TRUE(managed.ok()) << managed.status();
    for (int i = 0; i < 10; ++i) EXPECT_EQ(Fetch<float>((*managed)->session(), my_op), 1.0f);
    EXPECT_FALSE(sv->ShouldStop());
  }  // Leaving the scope stops the supervisor.
  EXPECT_TRUE(sv->ShouldStop());
}

TEST_F(SupervisorTest, ManagedSessionUserError) {
  Scope root = Scope::NewRootScope();
  Output my_op = ops::Const(root, 1.0f);
  auto sv = NewSupervisor(root, Options());
  auto managed = sv->ManagedSession("");
  ASSERT_TRUE(managed.ok()) << managed.status();
  absl::Status body;
  int last_step = -1;
  for (int step = 0; step < 10 && body.ok(); ++step) {
    last_step = step;
    if (step == 1) {
      body = absl::InternalError("failing here");
    } else {
      body = RunAll((*managed)->session(), {my_op});
    }
  }
  absl::Status ended = (*managed)->End(body);
  EXPECT_EQ(ended, absl::InternalError("failing here"));
  EXPECT_TRUE(sv->ShouldStop());
  EXPECT_EQ(last_step, 1);
  EXPECT_EQ((*managed)->End().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SupervisorTest, ManagedSessionIgnoreOutOfRangeError) {
  Scope root = Scope::NewRootScope();
  Output my_op = ops::Const(root, 1.0f);
  auto sv = NewSupervisor(root, Options());
  auto managed = sv->ManagedSession("");
  ASSERT_TRUE(managed.ok()) << managed.status();
  absl::Status body;
  int last_step = -1;
  for (int step = 0; step < 10 && body.ok(); ++step) {
    last_step = step;
    body = step == 3 ? absl::OutOfRangeError("all done") : RunAll((*managed)->session(), {my_op});
  }
  EXPECT_TRUE((*managed)->End(body).ok());
  EXPECT_TRUE(sv->ShouldStop());
  EXPECT_EQ(last_step, 3);
}

TEST_F(SupervisorTest, ManagedSessionDoNotKeepSummaryWriter) {
  Scope root = Scope::NewRootScope();
  Output summ = Summ(root);
  SupervisorOptions options = Options();
  options.summary_op = Output();
  auto sv = NewSupervisor(root, options);
  ManagedSessionOptions managed_options;
  managed_options.close_summary_writer = true;
  managed_options.start_standard_services = false;
  for (int i = 0; i < 2; ++i) {
    auto managed = sv->ManagedSession("", managed_options);
    ASSERT_TRUE(managed.ok()) << managed.status();
    ClientSession& session = (*managed)->session();
    ASSERT_TRUE(sv->SummaryComputed(session, FetchString(session, summ)).ok());
  }
  std::vector<std::string> files = EventFiles(logdir_);
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& path : files) {
    std::vector<Event> events = ReadEvents(path);
    ASSERT_EQ(events.size(), 4u) << path;
    EXPECT_EQ(events[0].file_version(), "brain.Event:2");
    EXPECT_FALSE(events[1].graph_def().empty());
    EXPECT_TRUE(SummaryIs(events[2], {{"c1", 1}, {"c2", 2}, {"c3", 3}}));
    EXPECT_EQ(events[3].session_log().status(), SessionLog::STOP);
  }
}

TEST_F(SupervisorTest, ManagedSessionKeepSummaryWriter) {
  Scope root = Scope::NewRootScope();
  Output summ = Summ(root);
  auto sv = NewSupervisor(root, Options());
  ManagedSessionOptions managed_options;
  managed_options.close_summary_writer = false;
  managed_options.start_standard_services = false;
  for (int i = 0; i < 2; ++i) {
    auto managed = sv->ManagedSession("", managed_options);
    ASSERT_TRUE(managed.ok()) << managed.status();
    ClientSession& session = (*managed)->session();
    ASSERT_TRUE(sv->SummaryComputed(session, FetchString(session, summ)).ok());
  }
  ASSERT_TRUE(sv->summary_writer()->Close().ok());
  std::vector<Event> events = LastEvents(logdir_);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_FALSE(events[1].graph_def().empty());
  EXPECT_TRUE(SummaryIs(events[2], {{"c1", 1}, {"c2", 2}, {"c3", 3}}));
  EXPECT_TRUE(SummaryIs(events[3], {{"c1", 1}, {"c2", 2}, {"c3", 3}}));
}

TEST_F(SupervisorTest, ChiefCanWriteEvents) {
  Scope root = Scope::NewRootScope();
  Output summ = Summ(root);
  SupervisorOptions options = Options();
  options.summary_op = Output();
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  GraphDef graph;
  ASSERT_TRUE(root.ToGraphDef(&graph).ok());
  ASSERT_TRUE(sv->SummaryComputed(**session, FetchString(**session, summ)).ok());
  ASSERT_TRUE(sv->Stop().ok());

  std::vector<Event> events = LastEvents(logdir_);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_TRUE(GraphIs(events[1], graph));
  EXPECT_TRUE(SummaryIs(events[2], {{"c1", 1}, {"c2", 2}, {"c3", 3}}));
  EXPECT_EQ(events[3].session_log().status(), SessionLog::STOP);
}

TEST_F(SupervisorTest, NonChiefCannotWriteEvents) {
  Scope root = Scope::NewRootScope();
  Output summ = Summ(root);
  SupervisorOptions options = Options();
  options.is_chief = false;
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  absl::Status s = sv->SummaryComputed(**session, FetchString(**session, summ));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("requires a summary writer"));
  auto services = sv->StartStandardServices(session->get());
  EXPECT_EQ(services.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(EventFiles(logdir_).empty());
}

TEST_F(SupervisorTest, NoLogdirButWantSummary) {
  Scope root = Scope::NewRootScope();
  Output summ = Summ(root);
  SupervisorOptions options = Options();
  options.logdir = "";
  options.summary_op = Output();
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  absl::Status s = sv->SummaryComputed(**session, FetchString(**session, summ));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("requires a summary writer"));
}

TEST_F(SupervisorTest, LogdirButExplicitlyNoSummaryWriter) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("foo"), {1.0f});
  Output summ = Summ(root);
  SupervisorOptions options = Options();
  options.summary_writer = nullptr;
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  // A checkpoint is still saved.
  EXPECT_TRUE(CheckpointExists(sv->save_path()));
  EXPECT_EQ(Runs(SupervisorService::kCheckpoint), 1);
  absl::Status s = sv->SummaryComputed(**session, FetchString(**session, summ));
  EXPECT_THAT(std::string(s.message()), HasSubstr("requires a summary writer"));
  EXPECT_TRUE(sv->Stop().ok());
  EXPECT_TRUE(EventFiles(logdir_).empty());
}

TEST_F(SupervisorTest, NoLogdirButExplicitSummaryWriter) {
  Scope root = Scope::NewRootScope();
  Output summ = Summ(root);
  SummaryWriterOptions writer_options;
  writer_options.clock = &clock_;
  auto writer = SummaryWriter::Create(logdir_, writer_options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  SupervisorOptions options = Options();
  options.logdir = "";
  options.summary_op = Output();
  options.summary_writer = writer->get();
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  GraphDef graph;
  ASSERT_TRUE(root.ToGraphDef(&graph).ok());
  ASSERT_TRUE(sv->SummaryComputed(**session, FetchString(**session, summ), 7).ok());
  ASSERT_TRUE(sv->Stop().ok());  // Flushes a given writer; it stays open.
  std::vector<Event> events = LastEvents(logdir_);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_TRUE(GraphIs(events[1], graph));
  EXPECT_TRUE(SummaryIs(events[2], {{"c1", 1}, {"c2", 2}, {"c3", 3}}));
  EXPECT_EQ(events[2].step(), 7);
  EXPECT_EQ(events[3].session_log().status(), SessionLog::STOP);
  EXPECT_TRUE((*writer)->Close().ok());
}

TEST_F(SupervisorTest, NoLogdirSucceeds) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f});
  SupervisorOptions options = Options();
  options.logdir = "";
  options.summary_op = Output();
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE(sv->Stop().ok());
  EXPECT_EQ(sv->save_path(), "");
}

TEST_F(SupervisorTest, UseSessionManager) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f});
  SessionManagerOptions manager_options;
  manager_options.session_options.resource_mgr = &resources_;
  manager_options.clock = &clock_;
  auto manager = SessionManager::Create(root, manager_options);
  ASSERT_TRUE(manager.ok());
  SupervisorOptions options = Options();
  options.logdir = "";
  options.session_manager = manager->get();
  auto sv = NewSupervisor(root, options);
  EXPECT_EQ(sv->session_manager(), manager->get());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 1.0f);
}

TEST_F(SupervisorTest, InitOp) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root, {1.0f, 2.0f, 3.0f});
  auto sv = NewSupervisor(root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 1.0f);
  EXPECT_TRUE(sv->Stop().ok());
}

TEST_F(SupervisorTest, InitFn) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root, {1.0f, 2.0f, 3.0f});
  SupervisorOptions options = Options();
  options.init_op = Operation();
  options.init_fn = [&](ClientSession& session) {
    return session.Run({}, {}, {v.initializer}, nullptr);
  };
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 1.0f);
  EXPECT_TRUE(sv->Stop().ok());
}

TEST_F(SupervisorTest, InitOpWithFeedDict) {
  Scope root = Scope::NewRootScope();
  Output p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT, PartialShape({3}));
  Variable v = MakeVariable(root.WithOpName("v"), p);
  SupervisorOptions options = Options();
  options.init_op = GlobalVariablesInitializer(root);
  options.init_feeds = {{p, Tensor::FromVector<float>({1, 2, 3})}};
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 1.0f);
  EXPECT_TRUE(sv->Stop().ok());
}

// The graph of TensorFlow's testReadyForLocalInitOp: v on a shared task, vadd, and w
// (a per-trainer copy of v, initialised by local_init_op once v is ready).
struct LocalModel {
  Scope root = Scope::NewRootScope();
  Variable v, w;
  Output vadd;
  Output ready_for_local_init;
  std::unique_ptr<Saver> saver;  // Of v only: w is the trainer's own.
  explicit LocalModel(float initial) {
    Scope local = root.WithDevice("/job:local");
    v = MakeVariable(local.WithOpName("v"), initial);
    vadd = ops::AssignAdd(local, v.ref, 1.0f);
    w = MakeVariable(local.WithOpName("w"), v.value,
                     VariableOptions{false, {GraphKeys::kLocalVariables}});
    ready_for_local_init = ReportUninitializedVariables(local.WithOpName("ready_for_local"), {v});
    SaverOptions options;
    options.var_list = {v};
    saver = std::move(*Saver::Create(root, options));
  }
};

TEST_F(SupervisorTest, ReadyForLocalInitOp) {
  auto get_session = [&](LocalModel& m, bool is_chief) {
    SupervisorOptions options = Options();
    options.is_chief = is_chief;
    options.saver = m.saver.get();
    options.recovery_wait_secs = absl::Seconds(1);
    options.init_op = m.v.initializer;
    options.local_init_op = m.w.initializer;
    options.ready_for_local_init_op = m.ready_for_local_init;
    auto sv = NewSupervisor(m.root, options);
    auto session = sv->PrepareOrWaitForSession("");
    EXPECT_TRUE(session.ok()) << session.status();
    return std::make_pair(std::move(sv), std::move(*session));
  };
  LocalModel m0(1), m1(1);
  auto [sv0, sess0] = get_session(m0, true);
  auto [sv1, sess1] = get_session(m1, false);
  EXPECT_EQ(Fetch<float>(*sess0, m0.w.value), 1);
  EXPECT_EQ(Fetch<float>(*sess1, m1.vadd), 2);
  EXPECT_EQ(Fetch<float>(*sess1, m1.w.value), 1);
  EXPECT_EQ(Fetch<float>(*sess0, m0.v.value), 2);
  EXPECT_TRUE(sv0->Stop().ok());
  EXPECT_TRUE(sv1->Stop().ok());
}

TEST_F(SupervisorTest, ReadyForLocalInitOpRestoreFromCheckpoint) {
  {
    ResourceMgr first_run;
    Scope root = Scope::NewRootScope();
    Variable v = MakeVariable(root.WithDevice("/job:local").WithOpName("v"), 10.0f);
    ops::ScalarSummary(root, "v", v.value);
    auto sv = NewSupervisor(root, Options(&first_run));
    auto session = sv->PrepareOrWaitForSession("");
    ASSERT_TRUE(session.ok()) << session.status();
    EXPECT_TRUE(CheckpointExists(sv->save_path()));
    EXPECT_TRUE(sv->Stop().ok());
  }
  auto get_session = [&](LocalModel& m, bool is_chief) {
    SupervisorOptions options = Options();
    options.is_chief = is_chief;
    options.saver = m.saver.get();
    options.local_init_op = m.w.initializer;
    options.ready_for_local_init_op = m.ready_for_local_init;
    auto sv = NewSupervisor(m.root, options);
    auto session = sv->PrepareOrWaitForSession("");
    EXPECT_TRUE(session.ok()) << session.status();
    return std::make_pair(std::move(sv), std::move(*session));
  };
  LocalModel m0(1), m1(1);
  auto [sv0, sess0] = get_session(m0, true);
  auto [sv1, sess1] = get_session(m1, false);
  EXPECT_EQ(Fetch<float>(*sess0, m0.w.value), 10);
  EXPECT_EQ(Fetch<float>(*sess1, m1.vadd), 11);
  EXPECT_EQ(Fetch<float>(*sess1, m1.w.value), 10);
  EXPECT_EQ(Fetch<float>(*sess0, m0.v.value), 11);
  EXPECT_TRUE(sv0->Stop().ok());
  EXPECT_TRUE(sv1->Stop().ok());
}

// Local variables with the Supervisor's defaults (issue 21, section 1): not in the
// checkpoint, initialised by the default local_init_op on chief and non-chief alike, and
// checked by the default ready_op.
TEST_F(SupervisorTest, LocalVariablesWithTheDefaults) {
  {
    ResourceMgr first_run;
    Scope root = Scope::NewRootScope();
    MakeVariable(root.WithDevice("/job:localhost").WithOpName("v"), 10.0f);
    auto sv = NewSupervisor(root, Options(&first_run));
    ASSERT_TRUE(sv->PrepareOrWaitForSession("").ok());
    EXPECT_TRUE(sv->Stop().ok());
  }
  // The model gained a local variable since: the chief restores v from a checkpoint
  // without it and initialises l itself.
  auto model = [](Variable* v, Variable* l) {
    Scope root = Scope::NewRootScope();
    const Scope here = root.WithDevice("/job:localhost");  // Replicas place variables.
    *v = MakeVariable(here.WithOpName("v"), 1.0f);
    *l = MakeVariable(here.WithOpName("l"), 7.0f,
                      VariableOptions{false, {GraphKeys::kLocalVariables}});
    return root;
  };
  Variable v0, l0, v1, l1;
  Scope chief_root = model(&v0, &l0);
  auto chief = NewSupervisor(chief_root, Options());
  auto chief_session = chief->PrepareOrWaitForSession("");
  ASSERT_TRUE(chief_session.ok()) << chief_session.status();
  EXPECT_EQ(Fetch<float>(**chief_session, v0.value), 10.0f);
  EXPECT_EQ(Fetch<float>(**chief_session, l0.value), 7.0f);
  // A non-chief sharing the variables becomes ready: its local init runs.
  Scope worker_root = model(&v1, &l1);
  SupervisorOptions worker_options = Options();
  worker_options.is_chief = false;
  worker_options.recovery_wait_secs = absl::Seconds(1);
  auto worker = NewSupervisor(worker_root, worker_options);
  auto worker_session = worker->PrepareOrWaitForSession("");
  ASSERT_TRUE(worker_session.ok()) << worker_session.status();
  EXPECT_EQ(Fetch<float>(**worker_session, l1.value), 7.0f);
  EXPECT_TRUE(worker->Stop().ok());
  EXPECT_TRUE(chief->Stop().ok());
}

// The defaults come from the graph's collections when the model put ops there (an init
// op made of several, TensorFlow's list, as a Group), and the defaults a Supervisor makes
// join the collections, so a second Supervisor of the graph uses the same ops.
TEST_F(SupervisorTest, DefaultsComeFromAndJoinTheGraphsCollections) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), 1.0f);
  Variable u = MakeVariable(root.WithOpName("u"), 2.0f);
  Operation init =
      ops::Group(root.WithOpName("my_init"), {Operation(ops::Assign(root, v.ref, 5.0f).node()),
                                              Operation(ops::Assign(root, u.ref, 6.0f).node())});
  root.graph()->AddToCollection(GraphKeys::kInitOp, init.name());
  auto sv = NewSupervisor(root, Options());
  ASSERT_NE(sv, nullptr);
  EXPECT_EQ(sv->init_op().name(), "my_init");
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 5.0f);
  EXPECT_EQ(Fetch<float>(**session, u.value), 6.0f);
  EXPECT_TRUE(sv->Stop().ok());

  // The ready op the Supervisor made is in the graph's collection now.
  const ClientGraph& graph = *root.graph();
  EXPECT_EQ(graph.GetCollection(GraphKeys::kInitOp), std::vector<std::string>{"my_init"});
  ASSERT_EQ(graph.GetCollection(GraphKeys::kReadyOp).size(), 1u);
  EXPECT_EQ(graph.GetCollection(GraphKeys::kReadyOp)[0], sv->ready_op().name());
  EXPECT_EQ(graph.GetCollection(GraphKeys::kLocalInitOp).size(), 1u);
  EXPECT_EQ(graph.GetCollection(GraphKeys::kReadyForLocalInitOp).size(), 1u);
  auto again = NewSupervisor(root, Options());
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->ready_op().name(), sv->ready_op().name());
  EXPECT_EQ(again->init_op().name(), "my_init");
}

// Without a local init op, an uninitialised local variable fails the default ready op.
TEST_F(SupervisorTest, AnUninitializedLocalVariableIsNotReady) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("v"), 1.0f);
  MakeVariable(root.WithOpName("l"), 2.0f, VariableOptions{false, {GraphKeys::kLocalVariables}});
  SupervisorOptions options = Options();
  options.local_init_op = Operation();  // With its check, as TensorFlow requires.
  options.ready_for_local_init_op = Output();
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  EXPECT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition) << session.status();
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("Variables not initialized: l"));
}

TEST_F(SupervisorTest, LocalInitOp) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f},
                            VariableOptions{false, {GraphKeys::kLocalVariables}});
  Variable w = MakeVariable(root.WithOpName("w"), {4, 5, 6},
                            VariableOptions{false, {GraphKeys::kLocalVariables}});
  // Only local_init_op initialises them.
  SupervisorOptions options = Options();
  options.init_op = Operation();
  options.local_init_op = VariablesInitializer(root.WithOpName("local_init"), {v, w});
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 1.0f);
  EXPECT_EQ(Fetch<int32_t>(**session, w.value), 4);
  EXPECT_TRUE(sv->Stop().ok());
}

TEST_F(SupervisorTest, LocalInitOpForNonChief) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithDevice("/job:localhost").WithOpName("v"), {1.0f, 2.0f, 3.0f},
                            VariableOptions{false, {GraphKeys::kLocalVariables}});
  SupervisorOptions options = Options();
  options.is_chief = false;
  options.init_op = Operation();
  options.local_init_op = v.initializer;
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 1.0f);
  EXPECT_TRUE(sv->Stop().ok());
}

TEST_F(SupervisorTest, InitOpFails) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f});
  MakeVariable(root.WithOpName("w"), {4.0f, 5.0f, 6.0f});
  SupervisorOptions options = Options();
  options.init_op = v.initializer;
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  EXPECT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("Variables not initialized: w"));
}

TEST_F(SupervisorTest, InitOpFailsForTransientVariable) {
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f},
                            VariableOptions{false, {GraphKeys::kLocalVariables}});
  MakeVariable(root.WithOpName("w"), {1.0f, 2.0f, 3.0f},
               VariableOptions{false, {GraphKeys::kLocalVariables}});
  SupervisorOptions options = Options();
  options.init_op = Operation();
  options.local_init_op = v.initializer;
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  EXPECT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("Variables not initialized: w"));
}

TEST_F(SupervisorTest, SetupFail) {
  {
    Scope root = Scope::NewRootScope();
    MakeVariable(root.WithOpName("v"), {1.0f, 2.0f, 3.0f});
    SupervisorOptions options = Options();
    options.is_chief = false;
    auto sv = Supervisor::Create(root, options);
    EXPECT_EQ(sv.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(sv.status().message()), HasSubstr("must have their device set"));
  }
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithDevice("/job:ps").WithOpName("v"), {1.0f, 2.0f, 3.0f});
  SupervisorOptions options = Options();
  options.is_chief = false;
  EXPECT_TRUE(Supervisor::Create(root, options).ok());
}

TEST_F(SupervisorTest, DefaultGlobalStep) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("global_step"), 287);
  auto sv = NewSupervisor(root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<int32_t>(**session, sv->global_step()), 287);
  EXPECT_TRUE(sv->Stop().ok());
  EXPECT_TRUE(CheckpointExists(sv->save_path() + "-287"));
}

TEST_F(SupervisorTest, StandardServicesWithoutGlobalStep) {
  {
    Scope root = Scope::NewRootScope();
    Variable v = MakeVariable(root.WithOpName("foo"), {1.0f});
    ops::ScalarSummary(root, Tensor::FromVector<std::string>({"v"}), v.value);
    auto sv = NewSupervisor(root, Options());
    auto session = sv->PrepareOrWaitForSession("");
    ASSERT_TRUE(session.ok()) << session.status();
    GraphDef graph;
    ASSERT_TRUE(root.ToGraphDef(&graph).ok());
    ASSERT_TRUE(sv->Stop().ok());
    std::vector<Event> events = LastEvents(logdir_);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0].file_version(), "brain.Event:2");
    EXPECT_TRUE(GraphIs(events[1], graph));
    EXPECT_TRUE(SummaryIs(events[2], {{"v", 1}}));
    EXPECT_EQ(events[3].session_log().status(), SessionLog::STOP);
  }
  // The checkpoint holds foo.
  ResourceMgr fresh;
  Scope root = Scope::NewRootScope();
  Variable v = MakeVariable(root.WithOpName("foo"), {10.1f});
  auto saver = Saver::Create(root, {});
  SessionOptions direct;
  direct.resource_mgr = &fresh;
  auto session = *ClientSession::Create(root, direct);
  ASSERT_TRUE(session->ExtendIfNeeded().ok());
  ASSERT_TRUE((*saver)->Restore(session->session(), logdir_ + "/model.ckpt").ok());
  EXPECT_EQ(Fetch<float>(*session, v.value), 1.0f);
}

TEST_F(SupervisorTest, StandardServicesWithGlobalStep) {
  Scope root = Scope::NewRootScope();
  Variable step = MakeVariable(root.WithOpName("global_step"), Tensor::Scalar<int64_t>(123));
  Output add60 = ops::AssignAdd(root, step.ref, Tensor::Scalar<int64_t>(60));
  auto sv = NewSupervisor(root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE(CheckpointExists(sv->save_path() + "-123"));
  GraphDef graph;
  ASSERT_TRUE(root.ToGraphDef(&graph).ok());
  ASSERT_TRUE(RunAll(**session, {add60}).ok());
  clock_.Advance(absl::Seconds(120));  // The step counter's interval.
  WaitForRuns(SupervisorService::kStepCounter, 2);
  ASSERT_TRUE(sv->Stop().ok());

  std::vector<Event> events = LastEvents(logdir_);
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_TRUE(GraphIs(events[1], graph));
  EXPECT_EQ(events[2].session_log().status(), SessionLog::START);
  EXPECT_EQ(events[2].step(), 123);
  // The counter's first sample comes at the start, as TensorFlow's.
  EXPECT_TRUE(SummaryIs(events[3], {{"global_step/sec", 0.0f}}));
  EXPECT_EQ(events[3].step(), 123);
  EXPECT_EQ(events[4].session_log().status(), SessionLog::CHECKPOINT);
  EXPECT_EQ(events[4].session_log().checkpoint_path(), sv->save_path() + "-123");
  EXPECT_EQ(events[4].step(), 123);
  EXPECT_TRUE(SummaryIs(events[5], {{"global_step/sec", 0.5f}}));  // 60 steps in 120 s.
  EXPECT_EQ(events[5].step(), 183);
  EXPECT_EQ(events[6].session_log().status(), SessionLog::STOP);
  EXPECT_EQ(Runs(SupervisorService::kCheckpoint), 1);
}

TEST_F(SupervisorTest, ServicesRunEveryInterval) {
  Scope root = Scope::NewRootScope();
  auto step = GetOrCreateGlobalStep(root);
  ASSERT_TRUE(step.ok());
  Output inc = ops::AssignAdd(root, step->ref, Tensor::Scalar<int64_t>(1));
  ops::ScalarSummary(root, "step", step->value);
  auto sv = NewSupervisor(root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Runs(SupervisorService::kCheckpoint), 1);
  EXPECT_EQ(Runs(SupervisorService::kSummary), 1);
  for (int minute = 1; minute <= 10; ++minute) {
    ASSERT_TRUE(RunAll(**session, {inc}).ok());
    clock_.Advance(absl::Seconds(60));
    if (minute % 2 == 0) {
      WaitForRuns(SupervisorService::kSummary, 1 + minute / 2);
      WaitForRuns(SupervisorService::kStepCounter, 1 + minute / 2);
    }
  }
  WaitForRuns(SupervisorService::kCheckpoint, 2);  // At 600 s.
  ASSERT_TRUE(sv->Stop().ok());
  EXPECT_TRUE(CheckpointExists(sv->save_path() + "-0"));
  EXPECT_TRUE(CheckpointExists(sv->save_path() + "-10"));
  EXPECT_EQ(Runs(SupervisorService::kSummary), 6);
  EXPECT_EQ(Runs(SupervisorService::kStepCounter), 6);
}

// save_summaries_secs at its default (120 s) and a run far shorter: the step counter
// has its sample at the start (TensorFlow's first comes then too).
TEST_F(SupervisorTest, AShortRunHasAStepRate) {
  Scope root = Scope::NewRootScope();
  ASSERT_TRUE(GetOrCreateGlobalStep(root).ok());
  auto sv = NewSupervisor(root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Runs(SupervisorService::kStepCounter), 1);
  ASSERT_TRUE(sv->Stop().ok());
  bool found = false;
  for (const Event& event : LastEvents(logdir_)) {
    found = found || SummaryIs(event, {{"global_step/sec", 0.0f}});
  }
  EXPECT_TRUE(found);
}

TEST_F(SupervisorTest, RestoreFromLogdirAtTheSavedStep) {
  {
    Scope root = Scope::NewRootScope();
    auto step = GetOrCreateGlobalStep(root);
    Variable v = MakeVariable(root.WithOpName("v"), 1.0f);
    Output set_v = ops::Assign(root, v.ref, 5.0f);
    Output set_step = ops::Assign(root, step->ref, Tensor::Scalar<int64_t>(10));
    auto sv = NewSupervisor(root, Options());
    auto managed = sv->ManagedSession("");
    ASSERT_TRUE(managed.ok()) << managed.status();
    ASSERT_TRUE(RunAll((*managed)->session(), {set_v, set_step}).ok());
    clock_.Advance(absl::Seconds(600));
    WaitForRuns(SupervisorService::kCheckpoint, 2);
    ASSERT_TRUE((*managed)->End().ok());
  }
  // A new supervisor, graph and variables (a restarted chief).
  ResourceMgr restarted;
  Scope root = Scope::NewRootScope();
  auto step = GetOrCreateGlobalStep(root);
  Variable v = MakeVariable(root.WithOpName("v"), 1.0f);
  auto sv = NewSupervisor(root, Options(&restarted));
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, v.value), 5.0f);
  EXPECT_EQ(Fetch<int64_t>(**session, step->value), 10);
  ASSERT_TRUE(sv->Stop().ok());
  // The new event file starts the session at the restored step.
  std::vector<Event> events = LastEvents(logdir_);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[2].session_log().status(), SessionLog::START);
  EXPECT_EQ(events[2].step(), 10);
}

TEST_F(SupervisorTest, InitFnLoadsAPretrainedSubset) {
  const std::string pretrained_dir = logdir_ + "_pretrained";
  std::string pretrained_path;
  {
    ResourceMgr other;
    Scope root = Scope::NewRootScope();
    Variable base = MakeVariable(root.WithOpName("base"), {7.0f, 8.0f});
    auto saver = Saver::Create(root, {});
    SessionOptions direct;
    direct.resource_mgr = &other;
    auto session = *ClientSession::Create(root, direct);
    ASSERT_TRUE(session->Run({}, {}, {base.initializer}, nullptr).ok());
    auto saved = (*saver)->Save(session->session(), pretrained_dir + "/base.ckpt");
    ASSERT_TRUE(saved.ok()) << saved.status();
    pretrained_path = *saved;
  }
  Scope root = Scope::NewRootScope();
  Variable base = MakeVariable(root.WithOpName("base"), {0.0f, 0.0f});
  Variable head = MakeVariable(root.WithOpName("head"), 3.0f);
  SaverOptions subset;
  subset.var_list = {base};
  subset.name = "pretrained_saver";
  auto base_saver = Saver::Create(root, subset);
  ASSERT_TRUE(base_saver.ok()) << base_saver.status();
  SupervisorOptions options = Options();
  options.init_op = VariablesInitializer(root.WithOpName("init_head"), {head});
  options.init_fn = [&](ClientSession& session) {
    RETURN_IF_ERROR(session.ExtendIfNeeded());
    return (*base_saver)->Restore(session.session(), pretrained_path);
  };
  auto sv = NewSupervisor(root, options);
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Fetch<float>(**session, base.value), 7.0f);
  EXPECT_EQ(Fetch<float>(**session, head.value), 3.0f);
  EXPECT_TRUE(sv->Stop().ok());
}

TEST_F(SupervisorTest, PrepareSessionAfterStop) {
  for (bool is_chief : {true, false}) {
    Scope root = Scope::NewRootScope();
    SupervisorOptions options = Options();
    options.is_chief = is_chief;
    auto sv = NewSupervisor(root, options);
    auto first = sv->PrepareOrWaitForSession("");
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE(sv->Stop().ok());
    EXPECT_TRUE(sv->ShouldStop());
    auto second = sv->PrepareOrWaitForSession("");
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_FALSE(sv->ShouldStop());
    ASSERT_TRUE(sv->Stop().ok());
    EXPECT_TRUE(sv->ShouldStop());
  }
}

TEST_F(SupervisorTest, LoopCallsTheFunctionEveryIntervalUntilStop) {
  Scope root = Scope::NewRootScope();
  auto sv = NewSupervisor(root, Options());
  absl::Mutex mu;
  int calls = 0;
  sv->Loop(absl::Seconds(10), [&] {
    absl::MutexLock lock(&mu);
    ++calls;
    return absl::OkStatus();
  });
  auto wait_calls = [&](int n) {
    absl::MutexLock lock(&mu);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return calls >= n; };
    return mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(60));
  };
  ASSERT_TRUE(wait_calls(1));  // At once.
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(wait_calls(2));
  ASSERT_TRUE(sv->Stop().ok());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(calls, 2);
}

TEST_F(SupervisorTest, AFailingLoopStopsTheSupervisorWithItsError) {
  Scope root = Scope::NewRootScope();
  auto sv = NewSupervisor(root, Options());
  sv->Loop(absl::Seconds(1), [] { return absl::DataLossError("disk on fire"); });
  sv->WaitForStop();
  EXPECT_EQ(sv->Stop(), absl::DataLossError("disk on fire"));
}

TEST_F(SupervisorTest, WritesToSeparateCheckpointAndSummaryLocations) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("v"), 1.0f);
  SupervisorOptions options = Options();
  options.logdir = "";
  options.checkpoint_dir = logdir_ + "/ckpt";
  options.summary_dir = logdir_ + "/events";
  auto sv = NewSupervisor(root, options);
  EXPECT_EQ(sv->save_path(), logdir_ + "/ckpt/model.ckpt");
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(sv->Stop().ok());
  EXPECT_TRUE(CheckpointExists(logdir_ + "/ckpt/model.ckpt"));
  EXPECT_EQ(EventFiles(logdir_ + "/events").size(), 1u);
}

TEST_F(SupervisorTest, NoQueueRunners) {
  Scope root = Scope::NewRootScope();
  auto sv = NewSupervisor(root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  auto threads = sv->StartQueueRunners(session->get());
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_TRUE(threads->empty());
  EXPECT_TRUE(sv->Stop().ok());
}

// An input pipeline: `source` holds 9 values and is closed; a queue runner moves them
// into `q`, from which the trainer dequeues `rec` until OUT_OF_RANGE.
struct Pipeline {
  Scope root = Scope::NewRootScope();
  Operation fill, close_source;
  Output rec;
  std::unique_ptr<QueueRunner> runner;
  explicit Pipeline(bool in_collection = true) {
    Output source = ops::FIFOQueue(root.WithOpName("source"), {DT_FLOAT});
    fill = ops::QueueEnqueueMany(root, source,
                                 {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9})});
    close_source = ops::QueueClose(root, source);
    ops::FIFOQueueAttrs attrs;
    attrs.capacity = 4;
    Output q = ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT}, attrs);
    Operation enqueue =
        ops::QueueEnqueue(root, q, {ops::QueueDequeue(root, source, {DT_FLOAT})[0]});
    auto created = QueueRunner::Create(root, q, {enqueue});
    EXPECT_TRUE(created.ok()) << created.status();
    runner = std::move(*created);
    if (in_collection) AddQueueRunner(root.graph(), *runner);
    rec = ops::QueueDequeue(root, q, {DT_FLOAT})[0];
  }
};

// TensorFlow's Supervisor.start_queue_runners(sess, queue_runners): the given runners,
// whatever the collection holds.
TEST_F(SupervisorTest, StartQueueRunnersWithAnExplicitList) {
  Pipeline p(/*in_collection=*/false);
  auto sv = NewSupervisor(p.root, Options());
  auto session = sv->PrepareOrWaitForSession("");
  ASSERT_TRUE(session.ok()) << session.status();
  auto none = sv->StartQueueRunners(session->get());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  auto threads = sv->StartQueueRunners(session->get(), {p.runner.get()});
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_EQ(threads->size(), 2u);  // The enqueue thread and the close-on-stop thread.
  ASSERT_TRUE((*session)->Run({}, {}, {p.fill}, nullptr).ok());
  ASSERT_TRUE((*session)->Run({}, {}, {p.close_source}, nullptr).ok());
  absl::Status s;
  float sum = 0;
  while (s.ok()) {
    std::vector<Tensor> out;
    s = (*session)->Run({p.rec}, &out);
    if (s.ok()) sum += out[0].scalar<float>();
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_EQ(sum, 45);
  EXPECT_TRUE(sv->Stop().ok());
}

TEST_F(SupervisorTest, ManagedEndOfInputOneQueue) {
  Pipeline p;
  auto sv = NewSupervisor(p.root, Options());
  auto managed = sv->ManagedSession("");
  ASSERT_TRUE(managed.ok()) << managed.status();
  ClientSession& session = (*managed)->session();
  ASSERT_TRUE(session.Run({}, {}, {p.fill}, nullptr).ok());
  ASSERT_TRUE(session.Run({}, {}, {p.close_source}, nullptr).ok());
  absl::Status body;
  float sum = 0;
  while (body.ok() && !sv->ShouldStop()) {
    std::vector<Tensor> out;
    body = session.Run({p.rec}, &out);
    if (body.ok()) sum += out[0].scalar<float>();
  }
  EXPECT_EQ(body.code(), absl::StatusCode::kOutOfRange) << body;
  EXPECT_EQ(sum, 45);
  EXPECT_TRUE((*managed)->End(body).ok());  // The end of input is a clean stop.
}

TEST_F(SupervisorTest, ManagedMainErrorWithQueues) {
  Pipeline p;
  auto sv = NewSupervisor(p.root, Options());
  auto managed = sv->ManagedSession("");
  ASSERT_TRUE(managed.ok()) << managed.status();
  ClientSession& session = (*managed)->session();
  ASSERT_TRUE(session.Run({}, {}, {p.fill}, nullptr).ok());  // The source stays open.
  absl::Status body;
  for (int step = 0; step < 9 && body.ok() && !sv->ShouldStop(); ++step) {
    body = step == 3 ? absl::InternalError("fail at step 3") : RunAll(session, {p.rec});
  }
  // The runner is blocked on the open source; the stop closes its queues.
  EXPECT_EQ((*managed)->End(body), absl::InternalError("fail at step 3"));
}

}  // namespace
}  // namespace overseer
