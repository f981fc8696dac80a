// One trainer of tests/consistent_checkpoint_test: Adam over two variables of --size
// floats, w0 on /job:ps/task:0 and w1 on /job:ps/task:1 (with their slots; the global
// step and the beta powers on ps:0), under a constant gradient of ones, so that the
// optimizer's whole state after N steps depends on N alone, whichever trainer ran them.
// Its ops run on /job:worker/task:<task_index>; it connects to --master and trains
// --steps steps. The chief (--is_chief) initialises the variables and, while both
// train, saves --saves checkpoints into --checkpoint_dir (a Saver with a shard per ps,
// named by the global step its snapshot holds), spread over its own steps (Turns); the
// non-chief polls until the variables are initialised. Prints "saved: <path>" per save
// and "global_step: <value>" at the end, and exits 0, or 1 with the error.
//
//   adam_trainer --master=grpc://127.0.0.1:2222 --task_index=0 --is_chief --steps=300

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/graph/ops_array.h"
#include "client/graph/optimizers.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "client/training/saver.h"
#include "core/status_macros.h"

ABSL_FLAG(std::string, master, "", "the master, grpc://host:port");
ABSL_FLAG(bool, is_chief, false, "initialise the variables and save the checkpoints");
ABSL_FLAG(int, task_index, 0, "this trainer's worker task: its ops run on /job:worker/task:N");
ABSL_FLAG(int64_t, steps, 300, "training steps of this trainer");
ABSL_FLAG(int64_t, size, 1 << 16, "floats in each of the two variables");
ABSL_FLAG(int, saves, 20, "the chief's checkpoints");
ABSL_FLAG(std::string, checkpoint_dir, "", "the chief's checkpoint location");
ABSL_FLAG(double, beta1, 0.99, "Adam's beta1");
ABSL_FLAG(double, beta2, 0.999, "Adam's beta2");

namespace overseer {
namespace {

struct Model {
  Variable global_step;
  Operation init;
  Operation train;
  Output report;
  std::unique_ptr<Saver> saver;
};

absl::StatusOr<Model> Build(const Scope& root, int task) {
  Model model;
  const int64_t size = absl::GetFlag(FLAGS_size);
  const Scope ps0 = root.WithDevice("/job:ps/task:0");
  const Scope ps1 = root.WithDevice("/job:ps/task:1");
  const Scope ops = root.WithDevice(absl::StrCat("/job:worker/task:", task));
  ASSIGN_OR_RETURN(model.global_step, CreateGlobalStep(ps0));
  Tensor zeros(DT_FLOAT, TensorShape({size}));
  for (int64_t i = 0; i < size; ++i) zeros.data<float>()[i] = 0;
  Variable w0 = MakeVariable(ps0.WithOpName("w0"), ops::Const(ps0.WithOpName("w0_init"), zeros));
  Variable w1 = MakeVariable(ps1.WithOpName("w1"), ops::Const(ps1.WithOpName("w1_init"), zeros));
  Tensor ones(DT_FLOAT, TensorShape({size}));
  for (int64_t i = 0; i < size; ++i) ones.data<float>()[i] = 1;
  Output grad = ops::Const(ops.WithOpName("grad"), ones);
  AdamOptimizer adam(0.001, absl::GetFlag(FLAGS_beta1), absl::GetFlag(FLAGS_beta2));
  ASSIGN_OR_RETURN(model.train,
                   adam.ApplyGradients(ops, {{grad, w0}, {grad, w1}}, &model.global_step));
  model.init = GlobalVariablesInitializer(ops.WithOpName("init"));
  model.report = ReportUninitializedVariables(ops.WithOpName("report_uninitialized"));
  SaverOptions saver_options;
  saver_options.sharded = true;                            // A shard per ps.
  saver_options.max_to_keep = absl::GetFlag(FLAGS_saves);  // Every save is listed.
  ASSIGN_OR_RETURN(model.saver, Saver::Create(root, saver_options));
  RETURN_IF_ERROR(root.status());
  return model;
}

absl::StatusOr<int64_t> GlobalStep(ClientSession& session, const Model& model) {
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session.Run({model.global_step.value}, &out));
  return out[0].scalar<int64_t>();
}

// How the chief's training thread and its saves take turns, so that the run's shape
// does not depend on how fast either is: save k (1-based) of n starts once the chief
// has run k * steps / n of its steps, and the chief runs step s only once the saves
// before the one due at its next threshold are done. So the chief trains during each
// save (up to the next threshold), takes at least one step between two saves (every
// checkpoint has a global step of its own), and the last save follows its last step.
class Turns {
 public:
  Turns(int64_t steps, int saves) : steps_(steps), saves_(saves) {}

  // Before the chief's step s (0-based).
  void BeforeStep(int64_t s) {
    const int64_t needed = s * saves_ / steps_ - 1;
    absl::MutexLock lock(&mu_);
    auto done = [this, needed]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return saves_done_ >= needed || saves_over_;
    };
    mu_.Await(absl::Condition(&done));
  }
  void AfterStep() {
    absl::MutexLock lock(&mu_);
    ++chief_steps_;
  }
  // The training thread ended (its last step, or an error).
  void TrainingOver() {
    absl::MutexLock lock(&mu_);
    training_over_ = true;
  }
  // Before save k (1-based).
  void BeforeSave(int k) {
    const int64_t due = (k * steps_ + saves_ - 1) / saves_;
    absl::MutexLock lock(&mu_);
    auto reached = [this, due]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return chief_steps_ >= due || training_over_;
    };
    mu_.Await(absl::Condition(&reached));
  }
  void AfterSave() {
    absl::MutexLock lock(&mu_);
    ++saves_done_;
  }
  // No more saves (the last one failed): training goes on alone.
  void SavesOver() {
    absl::MutexLock lock(&mu_);
    saves_over_ = true;
  }

 private:
  const int64_t steps_;
  const int saves_;
  absl::Mutex mu_;
  int64_t chief_steps_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t saves_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool training_over_ ABSL_GUARDED_BY(mu_) = false;
  bool saves_over_ ABSL_GUARDED_BY(mu_) = false;
};

absl::Status TrainSteps(ClientSession& session, const Model& model, Turns* turns) {
  const int64_t steps = absl::GetFlag(FLAGS_steps);
  for (int64_t step = 0; step < steps; ++step) {
    if (turns != nullptr) turns->BeforeStep(step);
    RETURN_IF_ERROR(session.Run({}, {}, {model.train}, nullptr));
    if (turns != nullptr) turns->AfterStep();
  }
  return absl::OkStatus();
}

// The chief's saves, while its training thread and the other trainer run (Turns).
absl::Status SaveWhileTraining(ClientSession& session, const Model& model, Turns* turns) {
  const std::string prefix = absl::GetFlag(FLAGS_checkpoint_dir) + "/model.ckpt";
  for (int k = 1; k <= absl::GetFlag(FLAGS_saves); ++k) {
    turns->BeforeSave(k);
    absl::StatusOr<std::string> path = model.saver->Save(
        session.session(), prefix, model.global_step.value, /*write_meta_graph=*/false);
    if (!path.ok()) {
      turns->SavesOver();  // The training thread must not wait for saves that never come.
      return path.status();
    }
    turns->AfterSave();
    std::printf("saved: %s\n", path->c_str());
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

absl::Status Train() {
  const int task = absl::GetFlag(FLAGS_task_index);
  Scope root = Scope::NewRootScope();
  ASSIGN_OR_RETURN(Model model, Build(root, task));
  SessionOptions session_options;
  session_options.target = absl::GetFlag(FLAGS_master);
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session,
                   ClientSession::Create(root, session_options));
  if (absl::GetFlag(FLAGS_is_chief)) {
    RETURN_IF_ERROR(session->Run({}, {}, {model.init}, nullptr));
    Turns turns(absl::GetFlag(FLAGS_steps), absl::GetFlag(FLAGS_saves));
    absl::Status training;
    std::thread trainer([&] {
      training = TrainSteps(*session, model, &turns);
      turns.TrainingOver();
    });
    absl::Status saving = SaveWhileTraining(*session, model, &turns);
    trainer.join();
    RETURN_IF_ERROR(training);
    RETURN_IF_ERROR(saving);
  } else {
    const absl::Time deadline = absl::Now() + absl::Seconds(120);
    while (true) {
      std::vector<Tensor> out;
      RETURN_IF_ERROR(session->Run({model.report}, &out));
      if (out[0].NumElements() == 0) break;
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError("the chief did not initialise the variables");
      }
      absl::SleepFor(absl::Milliseconds(20));  // Polling, as TensorFlow's recovery_wait.
    }
    RETURN_IF_ERROR(TrainSteps(*session, model, nullptr));
  }
  ASSIGN_OR_RETURN(int64_t step, GlobalStep(*session, model));
  std::printf("global_step: %lld\n", static_cast<long long>(step));
  return session->Close();
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Status s = overseer::Train();
  if (!s.ok()) {
    std::fprintf(stderr, "adam_trainer: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
