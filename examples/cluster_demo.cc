// The cluster demo (`./dev demo`): a training job on a local cluster of processes that
// survives the crash of a parameter server.
//
// It starts a master, 2 ps and 2 worker tasks, a checkpoint store and a summary writer
// as processes on free loopback ports, then a chief and a non-chief cluster_trainer
// (the example classifier, its variables sharded over both ps, under
// MonitoredTrainingSession). Mid-training it kills one ps with SIGKILL, restarts it on
// its port as an orchestrator would, and shows the trainers recover: their sessions are
// recreated, the chief restores the lost variables from the latest checkpoint, and
// training goes on to the last step (which the demo gives the trainers once the kill is
// done, so that training cannot end before it on a fast machine). At the end it says
// where the checkpoints and the TensorBoard logs are, shuts the cluster down (job done:
// ps and workers exit 0; the rest on SIGTERM) and prints "final accuracy: 0.xxxx" as
// its last line. The trainers learn Fashion-MNIST (Debian's dataset-fashion-mnist)
// unless told otherwise.
//
//   cluster_demo [--out_dir=DIR] [--last_step=N] [--kill=ps:1] [--kill_at_step=N]
//                [--data_dir=MNIST_DIR | --synthetic] ...
//
// Exits 0 when the job finished and everything shut down cleanly, 1 otherwise.

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/session/job.h"
#include "core/status_macros.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"
#include "examples/training_job.h"

ABSL_FLAG(std::string, out_dir, "",
          "directory for the checkpoints, TensorBoard logs and process logs; empty: a new "
          "directory under /tmp");
ABSL_FLAG(std::string, bin_dir, "",
          "directory of the server and trainer binaries (e.g. bazel-bin); empty: this "
          "program's runfiles");
ABSL_FLAG(int64_t, last_step, 4000, "global step at which training ends");
ABSL_FLAG(int64_t, batch_size, 200, "examples per training step of each trainer");
ABSL_FLAG(int64_t, hidden_units, 128, "units of the classifier's hidden layer");
ABSL_FLAG(std::string, model, "mlp",
          "the trainers' model: mlp, cnn (TensorFlow's Fashion-MNIST convnet; slow) or "
          "embedding (a table sharded over both ps, updated sparsely)");
ABSL_FLAG(bool, sync_replicas, false,
          "synchronous training: each update is the mean of both trainers' gradients "
          "(SyncReplicasOptimizer)");
ABSL_FLAG(std::string, kill, "ps:1", "the server to SIGKILL and restart mid-training (job:index)");
ABSL_FLAG(int64_t, kill_at_step, 1500, "global step at which to kill it; 0: no kill");
ABSL_FLAG(int64_t, save_checkpoint_steps, 250, "the chief saves a checkpoint every N steps");
ABSL_FLAG(int64_t, timeout_seconds, 600, "give up (exit 1) if the job takes longer");
ABSL_FLAG(std::string, data_dir, overseer::examples::kFashionMnistDir,
          "directory holding the four MNIST or Fashion-MNIST IDX files (gzipped or not) for "
          "the trainers; default: Fashion-MNIST, from Debian's dataset-fashion-mnist");
ABSL_FLAG(bool, synthetic, false,
          "train on synthetic data instead (fast, and trivially separable: accuracy 1.0)");

namespace overseer {
namespace examples {
namespace {

// A status line rewritten in place on a terminal (periodic lines otherwise), and event
// lines above it, each stamped with the time since the demo started.
class Display {
 public:
  Display() : tty_(::isatty(1) == 1), start_(absl::Now()) {}

  void Event(const std::string& text) {
    ClearStatus();
    std::printf("[%5.1fs] %s\n", absl::ToDoubleSeconds(absl::Now() - start_), text.c_str());
    std::fflush(stdout);
  }
  // Off a terminal, a status line is printed only when `group` exceeds every group
  // printed before.
  void Status(const std::string& text, int64_t group) {
    if (tty_) {
      if (text == shown_) return;
      std::printf("\r\033[K%s", text.c_str());
      shown_ = text;
    } else {
      if (group <= group_) return;
      group_ = group;
      std::printf("[%5.1fs] %s\n", absl::ToDoubleSeconds(absl::Now() - start_), text.c_str());
    }
    std::fflush(stdout);
  }
  void ClearStatus() {
    if (tty_ && !shown_.empty()) std::printf("\r\033[K");
    shown_.clear();
  }
  double Elapsed() const { return absl::ToDoubleSeconds(absl::Now() - start_); }

 private:
  const bool tty_;
  const absl::Time start_;
  std::string shown_;
  int64_t group_ = -1;
};

const char* TrainerName(int trainer) { return trainer == 0 ? "chief" : "non-chief"; }

absl::StatusOr<std::string> MakeOutDir() {
  std::string dir = absl::GetFlag(FLAGS_out_dir);
  if (dir.empty()) {
    std::string pattern = "/tmp/overseer-demo-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    dir = pattern;
  }
  std::error_code error;
  std::filesystem::create_directories(dir + "/logs", error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  return std::filesystem::absolute(dir).string();
}

// The checkpoints in `dir` ("model.ckpt-<step>"), newest first.
std::vector<std::string> Checkpoints(const std::string& dir) {
  std::map<int64_t, std::string, std::greater<int64_t>> by_step;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.substr(name.size() - 6) == ".index") {
      const std::string checkpoint = name.substr(0, name.size() - 6);
      int64_t step = -1;
      const size_t dash = checkpoint.rfind('-');
      if (dash != std::string::npos) (void)absl::SimpleAtoi(checkpoint.substr(dash + 1), &step);
      by_step[step] = checkpoint;
    }
  }
  std::vector<std::string> names;
  for (const auto& [step, name] : by_step) names.push_back(name);
  return names;
}

absl::Status CheckFlags(std::string* kill_job, int* kill_index) {
  RETURN_IF_ERROR(ModelKindFromName(absl::GetFlag(FLAGS_model)).status());
  std::vector<std::string> parts = absl::StrSplit(absl::GetFlag(FLAGS_kill), ':');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], kill_index) ||
      (parts[0] != "ps" && parts[0] != "worker" && parts[0] != "master" && parts[0] != "store" &&
       parts[0] != "writer")) {
    return absl::InvalidArgumentError(
        "--kill must be job:index with job ps, worker, master, store or writer, e.g. ps:1");
  }
  *kill_job = parts[0];
  if (absl::GetFlag(FLAGS_last_step) < 1 || absl::GetFlag(FLAGS_kill_at_step) < 0 ||
      absl::GetFlag(FLAGS_kill_at_step) >= absl::GetFlag(FLAGS_last_step) ||
      absl::GetFlag(FLAGS_save_checkpoint_steps) < 1 || absl::GetFlag(FLAGS_timeout_seconds) < 1) {
    return absl::InvalidArgumentError(
        "need 0 <= --kill_at_step < --last_step, and positive --save_checkpoint_steps and "
        "--timeout_seconds");
  }
  return absl::OkStatus();
}

// Stops every server. The chief's session told the cluster the job is done, so the ps
// and worker tasks (--exit_when_job_done) exit 0 by themselves; if they have not within
// a minute, this tells the cluster itself. The master, store and writer get SIGTERM.
absl::Status ShutDown(TrainingJob& job, Display& display) {
  ClusterLauncher& cluster = job.cluster();
  std::vector<std::pair<std::string, int>> tasks;
  for (const auto& server : cluster.servers()) {
    if (server.first == "ps" || server.first == "worker") tasks.push_back(server);
  }
  std::string who = "the chief told the cluster the job is done";
  std::vector<std::string> exited;
  for (const auto& [name, index] : tasks) {
    const std::string task = absl::StrCat(name, ":", index);
    absl::StatusOr<int> code = cluster.WaitForExit(name, index, absl::Minutes(1));
    if (absl::IsDeadlineExceeded(code.status())) {
      who = "the demo told the cluster the job is done";
      RETURN_IF_ERROR(SignalJobDone(cluster.master_target(), "cluster_demo: training ended"));
      code = cluster.WaitForExit(name, index, absl::Minutes(1));
    }
    if (!code.ok()) return code.status();
    if (*code != 0) {
      return absl::InternalError(absl::StrCat(task, " exited with code ", *code, "; its log:\n",
                                              cluster.Log(name, index)));
    }
    exited.push_back(task);
  }
  display.Event(absl::StrCat(who, ": ", absl::StrJoin(exited, ", "), " exited 0"));
  std::vector<std::string> stopped;
  for (const std::string name : {"master", "store", "writer"}) {
    absl::StatusOr<int> code = cluster.Stop(name, 0, SIGTERM);
    if (!code.ok()) return code.status();
    if (*code != 0) {
      return absl::InternalError(absl::StrCat(name, " exited with code ", *code,
                                              " on SIGTERM; its log:\n", cluster.Log(name, 0)));
    }
    stopped.push_back(name);
  }
  display.Event(absl::StrCat("SIGTERM: ", absl::StrJoin(stopped, ", "), " drained and exited 0"));
  return absl::OkStatus();
}

absl::Status RunDemo() {
  std::string kill_job;
  int kill_index = 0;
  RETURN_IF_ERROR(CheckFlags(&kill_job, &kill_index));
  ASSIGN_OR_RETURN(const std::string out, MakeOutDir());
  const int64_t last_step = absl::GetFlag(FLAGS_last_step);
  const int64_t kill_at = absl::GetFlag(FLAGS_kill_at_step);
  const absl::Duration timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_seconds));
  Display display;

  TrainingJobOptions options;
  options.cluster.num_ps = 2;
  options.cluster.num_workers = 2;
  options.cluster.log_dir = out + "/logs";
  options.cluster.checkpoint_root = out + "/checkpoints";
  options.cluster.summary_logdir = out + "/logdir";
  options.cluster.bin_dir = absl::GetFlag(FLAGS_bin_dir);
  options.cluster.worker_flags = {"--exit_when_job_done"};
  options.run = "demo";
  // With a kill, the demo ends training itself once the kill is done (StopAtStep), so
  // training is still going on when it comes, however fast the machine.
  options.last_step = kill_at > 0 ? 0 : last_step;
  options.save_checkpoint_steps = absl::GetFlag(FLAGS_save_checkpoint_steps);
  options.log_every = 1;
  options.synthetic_data = absl::GetFlag(FLAGS_synthetic);
  if (!options.synthetic_data) {
    const std::string data_dir = absl::GetFlag(FLAGS_data_dir);
    RETURN_IF_ERROR(CheckDataDir(data_dir));
    options.trainer_flags = {"--data_dir=" + data_dir};
  }
  options.trainer_flags.push_back(absl::StrCat("--batch_size=", absl::GetFlag(FLAGS_batch_size)));
  options.trainer_flags.push_back(
      absl::StrCat("--hidden_units=", absl::GetFlag(FLAGS_hidden_units)));
  options.trainer_flags.push_back("--model=" + absl::GetFlag(FLAGS_model));
  if (absl::GetFlag(FLAGS_sync_replicas)) options.trainer_flags.push_back("--sync_replicas");

  display.Event(
      "starting a master, 2 ps, 2 workers, a checkpoint store and a summary writer "
      "on loopback (output under " +
      out + ")");
  ASSIGN_OR_RETURN(std::unique_ptr<TrainingJob> job, TrainingJob::Start(options));
  ClusterLauncher& cluster = job->cluster();
  for (const auto& [name, index] : cluster.servers()) {
    display.Event(absl::StrFormat("  %-8s serving on %s (pid %d)", absl::StrCat(name, ":", index),
                                  cluster.address(name, index), cluster.pid(name, index)));
  }
  display.Event(absl::StrCat(
      "training the ", absl::GetFlag(FLAGS_model),
      " classifier (variables sharded over both ps) with a chief and a non-chief "
      "trainer",
      absl::GetFlag(FLAGS_sync_replicas) ? ", synchronously," : "", " until global step ",
      last_step, "; checkpoint every ", options.save_checkpoint_steps, " steps"));

  // What the display shows, updated from the trainers' lines.
  std::string phase = "training";
  int64_t killed_at = -1;
  double loss = 0;
  job->set_listener([&](int trainer, const TrainerLine& line) {
    if (line.kind == TrainerLine::kStep) loss = line.loss;
    if (line.kind == TrainerLine::kSession && line.session > 1) {
      const int64_t lost = killed_at > line.global_step ? killed_at - line.global_step : 0;
      std::string how = "nothing lost";
      if (lost > 0) {
        how = trainer == 0 ? absl::StrCat("the chief restored the latest checkpoint; ", lost,
                                          " steps to redo")
                           : "the model the chief restored";
      }
      display.Event(absl::StrCat(TrainerName(trainer), " recovered: session ", line.session,
                                 " resumes at global step ", line.global_step, " (", how, ")"));
      phase = "training (recovered)";
    }
    if (line.kind == TrainerLine::kFinal) {
      display.Event(
          absl::StrFormat("%s finished: test accuracy %.4f", TrainerName(trainer), line.accuracy));
    }
  });
  auto tick = [&] {
    const int64_t step = std::max<int64_t>(job->CurrentStep(), 0);
    display.Status(absl::StrFormat("global step %4d/%d  loss %.4f  recoveries %d  [%s]", step,
                                   last_step, loss, job->MinRecoveries(), phase),
                   step / 250);
  };

  if (kill_at > 0) {
    RETURN_IF_ERROR(job->Await([&] { return job->CurrentStep() >= kill_at; }, timeout,
                               absl::StrCat("global step ", kill_at), tick));
    const pid_t pid = cluster.pid(kill_job, kill_index);
    killed_at = job->MaxStep();
    ASSIGN_OR_RETURN(int code, cluster.Stop(kill_job, kill_index, SIGKILL));
    (void)code;
    RETURN_IF_ERROR(job->StopAtStep(last_step));
    display.Event(absl::StrCat("killed ", kill_job, ":", kill_index, " (pid ", pid,
                               ") with SIGKILL at global step ", killed_at,
                               kill_job == "ps" ? ": the variables it held are gone" : ""));
    phase = "waiting for the restart";
    tick();
    RETURN_IF_ERROR(cluster.Restart(kill_job, kill_index));
    display.Event(absl::StrCat("restarted ", kill_job, ":", kill_index, " on ",
                               cluster.address(kill_job, kill_index), " (pid ",
                               cluster.pid(kill_job, kill_index),
                               "), as an orchestrator would; the trainers recover"));
    phase = "recovering";
    // A ps or master restart aborts both trainers' sessions, a worker's only the
    // trainer whose ops run there; the store and the writer are retried, not recovered.
    auto recovered = [&] {
      if (kill_job == "ps" || kill_job == "master") return job->MinRecoveries() >= 1;
      if (kill_job == "worker" && kill_index < job->num_trainers()) {
        return job->report(kill_index).recoveries >= 1;
      }
      return true;
    };
    RETURN_IF_ERROR(job->Await(recovered, timeout, "the trainers to recover", tick));
  }
  RETURN_IF_ERROR(job->WaitForTrainers(timeout, tick));
  display.ClearStatus();
  const TrainerReport& chief = job->report(0);
  if (!chief.final_accuracy) return absl::InternalError("the chief printed no final accuracy");
  // The chief's last save is at the final global step.
  const std::vector<std::string> checkpoints = Checkpoints(job->checkpoint_dir());
  display.Event(
      absl::StrCat("training finished",
                   checkpoints.empty() ? "" : " (final checkpoint " + checkpoints.front() + ")",
                   " with ", chief.recoveries, " recovery(ies) of the chief and ",
                   job->report(1).recoveries, " of the non-chief"));
  RETURN_IF_ERROR(ShutDown(*job, display));

  std::printf("\ncheckpoints (TensorFlow's tensor-bundle format): %s\n",
              job->checkpoint_dir().c_str());
  if (!checkpoints.empty()) {
    std::printf("  newest %s, %zu kept (the state file 'checkpoint' lists them)\n",
                checkpoints.front().c_str(), checkpoints.size());
  }
  std::printf("TensorBoard events: %s\n  view them: tensorboard --logdir %s/logdir\n",
              job->summary_dir().c_str(), out.c_str());
  std::printf("process logs: %s/logs\n", out.c_str());
  std::printf("final accuracy: %.4f\n", *chief.final_accuracy);
  return absl::OkStatus();
}

}  // namespace
}  // namespace examples
}  // namespace overseer

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Trains the example classifier on a local cluster of processes (master, 2 ps, 2 "
      "workers, checkpoint store, summary writer), kills a ps with SIGKILL mid-training, "
      "restarts it and shows the job recover.\nUsage: cluster_demo [--out_dir=DIR] ...");
  absl::ParseCommandLine(argc, argv);
  absl::Status status = overseer::examples::RunDemo();
  if (!status.ok()) {
    std::fflush(stdout);
    std::fprintf(stderr, "\ncluster_demo: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
