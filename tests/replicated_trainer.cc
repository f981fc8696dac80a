// One trainer of between-graph replicated training, as tests/replicated_training_test
// runs two of them against a LocalCluster: builds the example classifier with its
// variables sharded over the ps tasks (ReplicaDeviceSetter) and its other ops on
// /job:worker/task:<task_index>, connects to --master through GrpcSession, and trains.
// The chief (--is_chief) initialises the variables; a non-chief polls
// ReportUninitializedVariables until they are initialised (at most
// --init_wait_seconds). Prints "final accuracy: <test accuracy>" and
// "global_step: <value>" and exits 0, or exits 1 with the error.
//
//   replicated_trainer --master=grpc://127.0.0.1:2222 --task_index=1 --num_ps=2 --steps=300

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client_session.h"
#include "client/device_setter.h"
#include "client/variables.h"
#include "core/status_macros.h"
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
  return absl::DeadlineExceededError(absl::StrCat(
      "variables still uninitialised after ", absl::FormatDuration(timeout), ": ",
      absl::StrJoin(missing, ", ")));
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

  const int64_t batch = absl::GetFlag(FLAGS_batch_size);
  const int64_t steps = absl::GetFlag(FLAGS_steps);
  std::vector<Tensor> out;
  for (int64_t step = 0; step < steps; ++step) {
    Tensor x, y;
    // The trainers read different parts of the data.
    data.train.Batch((step * 2 + task) * batch, batch, &x, &y);
    RETURN_IF_ERROR(session->Run({{model.images, x}, {model.labels, y}}, {model.loss},
                                 {model.train}, &out));
  }
  Tensor x, y;
  data.test.Batch(0, data.test.num_examples, &x, &y);
  RETURN_IF_ERROR(session->Run({{model.images, x}, {model.labels, y}},
                               {model.accuracy, model.global_step.value}, &out));
  std::printf("final accuracy: %.4f\nglobal_step: %lld\n", out[0].scalar<float>(),
              static_cast<long long>(out[1].scalar<int64_t>()));
  return absl::OkStatus();
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
