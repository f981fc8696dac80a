#ifndef OVERSEER_EXAMPLES_TRAINING_JOB_H_
#define OVERSEER_EXAMPLES_TRAINING_JOB_H_

// One training job on this machine, as cluster_demo, the chaos test and the recovery
// benchmark run it: a ClusterLauncher cluster (master, ps and worker tasks, checkpoint
// store, summary writer) and one cluster_trainer process per worker task (task 0 is
// the chief), whose output lines (trainer_output.h) are followed as they are printed.
// The caller drives it (Await, the launcher's Stop and Restart) and reads what the
// trainers reported. Not thread-safe.
//
//   ASSIGN_OR_RETURN(auto job, TrainingJob::Start(options));
//   RETURN_IF_ERROR(job->Await([&] { return job->CurrentStep() >= 200; }, absl::Minutes(5),
//                              "global step 200"));
//   job->cluster().Stop("ps", 1, SIGKILL);
//   RETURN_IF_ERROR(job->StopAtStep(600));   // With options.last_step = 0.
//   RETURN_IF_ERROR(job->cluster().Restart("ps", 1));
//   RETURN_IF_ERROR(job->WaitForTrainers(absl::Minutes(5)));

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "examples/trainer_output.h"
#include "testing/child_process.h"
#include "testing/cluster_launcher.h"
#include "testing/trainer_process.h"

namespace overseer {
namespace examples {

struct TrainingJobOptions {
  // The cluster; checkpoint_store and summary_writer are turned on, log_dir must be set
  // (the trainers' output goes there too: trainer_<i>.out and trainer_<i>.log).
  ClusterLauncherOptions cluster;
  // The run name in the checkpoint store and the summary writer.
  std::string run = "run";
  // The trainers stop at this global step; 0: only when told (StopAtStep), which is
  // how a caller that crashes servers mid-training makes sure that training is still
  // going on at its last crash, however fast the machine.
  int64_t last_step = 600;
  int64_t save_checkpoint_steps = 100;
  int64_t log_every = 1;
  // The trainers' data: synthetic (--synthetic: fast, for tests), or the
  // cluster_trainer's default, Fashion-MNIST, unless trainer_flags name another.
  bool synthetic_data = true;
  // More flags for every cluster_trainer (see its --help).
  std::vector<std::string> trainer_flags;
};

// What one trainer has reported so far.
struct TrainerReport {
  std::vector<TrainerLine> lines;   // Its session and step lines, in order.
  std::optional<TrainerLine> last;  // The latest of them.
  int64_t sessions = 0;
  int64_t recoveries = 0;
  std::optional<double> final_accuracy;
  std::optional<int> exit_code;  // Once it exited.
};

class TrainingJob {
 public:
  // Starts the cluster (waiting for every server to serve), then the trainers.
  // Errors of ClusterLauncher::Start or of finding or starting cluster_trainer.
  static absl::StatusOr<std::unique_ptr<TrainingJob>> Start(TrainingJobOptions options);
  // Kills the trainers and the servers still running.
  ~TrainingJob() = default;

  ClusterLauncher& cluster() { return *cluster_; }
  int num_trainers() const { return static_cast<int>(trainers_.size()); }
  const TrainerReport& report(int trainer) const { return trainers_[trainer].report; }
  // "<checkpoint root>/<run>" and "<summary logdir>/<run>" on this machine.
  std::string checkpoint_dir() const;
  std::string summary_dir() const;

  // Called by Poll for every new line of trainer `trainer` (before the reports change).
  using Listener = std::function<void(int trainer, const TrainerLine& line)>;
  void set_listener(Listener listener) { listener_ = std::move(listener); }

  // Reads the trainers' new output lines and notes exits.
  void Poll();

  // The global step of the latest step or session line of any trainer (-1 before any).
  int64_t CurrentStep() const;
  // The largest global step of any line so far (-1 before any).
  int64_t MaxStep() const;
  // The fewest recoveries any trainer reported.
  int64_t MinRecoveries() const;
  // Whether every trainer has exited.
  bool TrainersExited() const;

  // Polls until `done` is true. Also calls `tick` (if set) after each poll.
  // DEADLINE_EXCEEDED "waiting for <what>" after `timeout`; INTERNAL with the trainer's
  // log when a trainer exits non-zero, or when every trainer exited before `done`.
  absl::Status Await(const std::function<bool()>& done, absl::Duration timeout,
                     absl::string_view what, const std::function<void()>& tick = nullptr);

  // Awaits every trainer's exit; INTERNAL with the log of one that exited non-zero.
  absl::Status WaitForTrainers(absl::Duration timeout, const std::function<void()>& tick = nullptr);

  // The stderr of trainer `trainer` so far.
  std::string TrainerLog(int trainer) const;

  // The port of trainer `trainer`'s /metrics on 127.0.0.1 (cluster_trainer serves them
  // on a free port unless trainer_flags say otherwise), once it wrote it; NOT_FOUND
  // before that or for an unknown trainer.
  absl::StatusOr<int> TrainerMetricsPort(int trainer) const;

  // Tells the trainers to stop when the global step reaches `step` (at once if it has):
  // writes their stop file (cluster_trainer --stop_file), whole and atomically. INTERNAL
  // if it cannot be written.
  absl::Status StopAtStep(int64_t step);
  // That file: <log_dir>/stop_at_step.
  std::string stop_file() const;

 private:
  struct Trainer {
    std::unique_ptr<TrainerProcess> process;
    TrainerReport report;
  };

  explicit TrainingJob(TrainingJobOptions options) : options_(std::move(options)) {}
  absl::Status CheckTrainers(bool all_exited_is_error, absl::string_view what) const;

  const TrainingJobOptions options_;
  std::unique_ptr<ClusterLauncher> cluster_;
  std::unique_ptr<DirectoryWatch> watch_;
  std::vector<Trainer> trainers_;
  Listener listener_;
};

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_TRAINING_JOB_H_
