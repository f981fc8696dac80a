// One trainer of between-graph replicated training, as tests/replicated_training_test
// runs two of them against a LocalCluster: builds the example classifier with its
// variables sharded over the ps tasks (ReplicaDeviceSetter) and its other ops on
// /job:worker/task:<task_index>, connects to --master through GrpcSession, and trains.
// The chief (--is_chief) initialises the variables; a non-chief polls
// ReportUninitializedVariables until they are initialised (at most
// --init_wait_seconds). Prints "final accuracy: <test accuracy>" and
// "global_step: <value>" and exits 0, or exits 1 with the error.
//
// With --supervisor both run under a Supervisor instead (tests/supervisor_cluster_test):
// the chief restores the latest checkpoint of --checkpoint_dir or initialises, marks
// the model ready and runs the checkpoint and summary services (events into
// --summary_dir), then saves a last checkpoint; the non-chief waits in WaitForSession.
// They also print "start global_step: <step>" and, for the chief, "saved: <checkpoint
// path>".
//
//   replicated_trainer --master=grpc://127.0.0.1:2222 --task_index=1 --num_ps=2 --steps=300

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/graph/device_setter.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "client/training/supervisor.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"

ABSL_FLAG(std::string, master, "", "the master, grpc://host:port");
ABSL_FLAG(bool, is_chief, false, "initialise the variables (exactly one trainer does)");
ABSL_FLAG(int, task_index, 0, "this trainer's worker task: its ops run on /job:worker/task:N");
ABSL_FLAG(int, num_ps, 2, "ps tasks to shard the variables over");
ABSL_FLAG(int64_t, steps, 300, "training steps of this trainer");
ABSL_FLAG(int64_t, batch_size, 50, "examples per step");
ABSL_FLAG(int64_t, hidden_units, 64, "units of the hidden layer");
ABSL_FLAG(int64_t, init_wait_seconds, 120,
          "how long a non-chief waits for the chief to initialise the variables");
ABSL_FLAG(bool, supervisor, false, "train under a Supervisor (chief prepares, others wait)");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "--supervisor: checkpoint location, a local directory or grpc://host:port/<run>");
ABSL_FLAG(std::string, summary_dir, "", "--supervisor: the chief's event files");
ABSL_FLAG(int64_t, save_model_secs, 600, "--supervisor: seconds between checkpoints");

namespace overseer {
namespace {

// Waits until every variable is initialised; DEADLINE_EXCEEDED naming the ones that
// are not after `timeout`.
absl::Status WaitForInitialised(ClientSession& session, const Output& report,
                                absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::string> missing;
  while (true) {
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session.Run({report}, &out));
    missing.clear();
    for (int64_t i = 0; i < out[0].NumElements(); ++i) {
      missing.push_back(out[0].flat<std::string>()(i));
    }
    if (missing.empty()) return absl::OkStatus();
    if (absl::Now() > deadline) break;
    absl::SleepFor(absl::Milliseconds(100));  // The chief's recovery_wait, as in TF.
  }
  return absl::DeadlineExceededError(absl::StrCat("variables still uninitialised after ",
                                                  absl::FormatDuration(timeout), ": ",
                                                  absl::StrJoin(missing, ", ")));
}

// The training loop both modes share: this trainer's part of the data, then the test
// accuracy and the global step.
absl::Status TrainSteps(ClientSession& session, const examples::Classifier& model,
                        const examples::TrainTest& data, int task,
                        const std::function<bool()>& should_stop) {
  const int64_t batch = absl::GetFlag(FLAGS_batch_size);
  const int64_t steps = absl::GetFlag(FLAGS_steps);
  std::vector<Tensor> out;
  for (int64_t step = 0; step < steps && !should_stop(); ++step) {
    Tensor x, y;
    // The trainers read different parts of the data.
    data.train.Batch((step * 2 + task) * batch, batch, &x, &y);
    RETURN_IF_ERROR(
        session.Run({{model.images, x}, {model.labels, y}}, {model.loss}, {model.train}, &out));
  }
  Tensor x, y;
  data.test.Batch(0, data.test.num_examples, &x, &y);
  RETURN_IF_ERROR(session.Run({{model.images, x}, {model.labels, y}},
                              {model.accuracy, model.global_step.value}, &out));
  std::printf("final accuracy: %.4f\nglobal_step: %lld\n", out[0].scalar<float>(),
              static_cast<long long>(out[1].scalar<int64_t>()));
  return absl::OkStatus();
}

// --supervisor: the chief prepares the session (restore or init), the non-chief waits.
absl::Status TrainSupervised(const Scope& root, const examples::Classifier& model,
                             const examples::TrainTest& data, int task) {
  const bool is_chief = absl::GetFlag(FLAGS_is_chief);
  SupervisorOptions options;
  options.clock = Clock::Real();
  options.is_chief = is_chief;
  options.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  options.summary_dir = absl::GetFlag(FLAGS_summary_dir);
  options.init_op = model.init;
  options.global_step = model.global_step.value;
  options.save_model_secs = absl::Seconds(absl::GetFlag(FLAGS_save_model_secs));
  ASSIGN_OR_RETURN(std::unique_ptr<Supervisor> sv, Supervisor::Create(root, options));

  // The chief also starts its checkpoint and summary services here.
  PrepareOrWaitOptions prepare;
  prepare.max_wait = absl::Seconds(absl::GetFlag(FLAGS_init_wait_seconds));
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session,
                   sv->PrepareOrWaitForSession(absl::GetFlag(FLAGS_master), prepare));
  ASSIGN_OR_RETURN(int64_t start_step, sv->GlobalStepValue(*session));
  std::printf("start global_step: %lld\n", static_cast<long long>(start_step));
  std::fflush(stdout);

  absl::Status trained = TrainSteps(*session, model, data, task, [&] { return sv->ShouldStop(); });
  if (trained.ok() && is_chief) {
    // TensorFlow's Supervisor does not save on stop; trainers save their last step
    // (named by the global step the save holds: the other trainer may still train).
    RETURN_IF_ERROR(session->ExtendIfNeeded());
    ASSIGN_OR_RETURN(std::string path, sv->saver()->Save(session->session(), sv->save_path(),
                                                         model.global_step.value));
    std::printf("saved: %s\n", path.c_str());
  }
  if (!trained.ok()) sv->RequestStop(trained).IgnoreError();
  absl::Status stopped = sv->Stop();
  session->Close().IgnoreError();
  RETURN_IF_ERROR(trained);
  return stopped;
}

absl::Status Train() {
  const int task = absl::GetFlag(FLAGS_task_index);
  examples::TrainTest data = examples::MakeSynthetic(4000, 1000, 7);

  ReplicaDeviceSetterOptions setter_options;
  setter_options.num_ps_tasks = absl::GetFlag(FLAGS_num_ps);
  setter_options.worker_device = absl::StrCat("/job:worker/task:", task);
  ASSIGN_OR_RETURN(ReplicaDeviceSetter setter, ReplicaDeviceSetter::Create(setter_options));

  Scope root = Scope::NewRootScope();
  examples::ClassifierOptions options;
  options.hidden_units = absl::GetFlag(FLAGS_hidden_units);
  options.device_setter = &setter;
  ASSIGN_OR_RETURN(examples::Classifier model, examples::BuildClassifier(root, options));
  if (absl::GetFlag(FLAGS_supervisor)) return TrainSupervised(root, model, data, task);
  Output report =
      ReportUninitializedVariables(setter.ForOps(root).WithOpName("report_uninitialized"));
  RETURN_IF_ERROR(root.status());

  SessionOptions session_options;
  session_options.target = absl::GetFlag(FLAGS_master);
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session,
                   ClientSession::Create(root, session_options));
  if (absl::GetFlag(FLAGS_is_chief)) {
    RETURN_IF_ERROR(session->Run({}, {}, {model.init}, nullptr));
  } else {
    RETURN_IF_ERROR(WaitForInitialised(*session, report,
                                       absl::Seconds(absl::GetFlag(FLAGS_init_wait_seconds))));
  }
  return TrainSteps(*session, model, data, task, [] { return false; });
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Status s = overseer::Train();
  if (!s.ok()) {
    std::fprintf(stderr, "replicated_trainer: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
