// One trainer of tests/consistent_checkpoint_test: Adam over two variables of --size
// floats, w0 on /job:ps/task:0 and w1 on /job:ps/task:1 (with their slots; the global
// step and the beta powers on ps:0), under a constant gradient of ones, so that the
// optimizer's whole state after N steps depends on N alone, whichever trainer ran them.
// Its ops run on /job:worker/task:<task_index>; it connects to --master and trains
// --steps steps. The chief (--is_chief) initialises the variables and, while both
// train, saves --saves checkpoints into --checkpoint_dir (a Saver with a shard per ps,
// named by the global step its snapshot holds), spread over the steps of both; the
// non-chief polls until the variables are initialised. Prints "saved: <path>" per save
// and "global_step: <value>" at the end, and exits 0, or 1 with the error.
//
//   adam_trainer --master=grpc://127.0.0.1:2222 --task_index=0 --is_chief --steps=300

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
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

absl::Status TrainSteps(ClientSession& session, const Model& model) {
  const int64_t steps = absl::GetFlag(FLAGS_steps);
  for (int64_t step = 0; step < steps; ++step) {
    RETURN_IF_ERROR(session.Run({}, {}, {model.train}, nullptr));
  }
  return absl::OkStatus();
}

// The chief's saves, while its training thread and the other trainer run: save k of n
// when the global step reaches k * 2 * steps / (n + 1), or at once when its own
// training has ended.
absl::Status SaveWhileTraining(ClientSession& session, const Model& model,
                               const std::atomic<bool>& trained) {
  const int saves = absl::GetFlag(FLAGS_saves);
  const int64_t interval = 2 * absl::GetFlag(FLAGS_steps) / (saves + 1);
  const std::string prefix = absl::GetFlag(FLAGS_checkpoint_dir) + "/model.ckpt";
  for (int k = 1; k <= saves; ++k) {
    while (!trained) {
      ASSIGN_OR_RETURN(int64_t step, GlobalStep(session, model));
      if (step >= k * interval) break;
      absl::SleepFor(absl::Milliseconds(2));  // Pacing the polls only.
    }
    ASSIGN_OR_RETURN(std::string path,
                     model.saver->Save(session.session(), prefix, model.global_step.value,
                                       /*write_meta_graph=*/false));
    std::printf("saved: %s\n", path.c_str());
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
    std::atomic<bool> trained{false};
    absl::Status training;
    std::thread trainer([&] {
      training = TrainSteps(*session, model);
      trained = true;
    });
    absl::Status saving = SaveWhileTraining(*session, model, trained);
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
    RETURN_IF_ERROR(TrainSteps(*session, model));
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
