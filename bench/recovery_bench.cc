// Benchmark of recovery from server crashes (./dev bench), on the training job of the
// cluster demo (examples/training_job.h: master, 2 ps, 2 workers, checkpoint store,
// summary writer, a chief and a non-chief cluster_trainer under
// MonitoredTrainingSession, a checkpoint every kCheckpointSteps global steps). Servers
// are killed with SIGKILL, one at a time with kProgress steps of training in between,
// and restarted on their ports at once:
//
//   recovery.lost_steps_worker, recovery.lost_steps_master: global steps lost by a
//     worker (worker 1) or master restart: how far a trainer's step fell below one it
//     printed before the kill, or a session created after the kill resumed below the
//     highest step printed before it (0 if nothing went back). Goal and baseline: 0
//     (the variables live on the ps, which kept them).
//   recovery.lost_steps_ps: global steps lost by a ps restart (ps 1 loses its
//     variables): the highest step printed before the kill minus the step training
//     resumed at after the chief's restore; the largest of kPsKills kills, made at
//     different points of the checkpoint interval (what is lost depends on how long ago
//     the last checkpoint was). Goal: at most one checkpoint interval; baseline: that
//     interval, kCheckpointSteps (ratio <= 1 meets the goal).
//   recovery.ps_restart_to_step_s: seconds from the restarted ps serving (its health
//     check answering SERVING) to the first successful training step of either trainer
//     after it; median of kPsKills kills. Goal: <= 2 s; baseline: the goal, 2 s
//     (there is no other system in the run to compare with).
//
// The trainers print the wall time of each step, so the time is measured where the
// step happened, not when this process read the line.

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "core/logging.h"
#include "examples/training_job.h"

namespace overseer {
namespace {

using examples::TrainerLine;
using examples::TrainingJob;

constexpr int64_t kCheckpointSteps = 50;
constexpr int64_t kProgress = 100;
constexpr int kPsKills = 3;
constexpr absl::Duration kWait = absl::Minutes(5);

void Check(const absl::Status& s) { CHECK(s.ok()) << s; }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

class Bench {
 public:
  explicit Bench(std::unique_ptr<TrainingJob> job) : job_(std::move(job)) {}

  // Waits for kProgress steps of training past the current step.
  void Progress(int64_t extra = 0) {
    const int64_t target = job_->CurrentStep() + kProgress + extra;
    Check(job_->Await([&] { return job_->CurrentStep() >= target; }, kWait,
                      absl::StrCat("global step ", target)));
  }

  // Kills and restarts job:index; waits until trainer `t` (or both, t < 0) recovered.
  void KillAndRestart(const std::string& job, int index, int t) {
    std::vector<int64_t> recoveries;
    for (int i = 0; i < job_->num_trainers(); ++i) recoveries.push_back(job_->report(i).recoveries);
    previous_restart_time_ = restart_time_;
    kill_time_ = examples::WallSeconds();
    CHECK(job_->cluster().Stop(job, index, SIGKILL).ok());
    Check(job_->cluster().Restart(job, index));
    restart_time_ = examples::WallSeconds();
    Check(job_->Await(
        [&] {
          for (int i = 0; i < job_->num_trainers(); ++i) {
            if ((t < 0 || t == i) && job_->report(i).recoveries <= recoveries[i]) return false;
          }
          return true;
        },
        kWait, absl::StrCat("recovery from a restart of ", job, ":", index)));
  }

  // Steps lost by the last restart when nothing was restored: how far a trainer's
  // step fell below one it printed before the kill (its reads are ordered), or a
  // session created after the kill resumed below the highest step printed before it.
  int64_t LostWithoutRestore() {
    Progress();
    const int64_t highest = HighestBeforeKill(-1);
    int64_t lost = 0;
    for (int t = 0; t < job_->num_trainers(); ++t) {
      const int64_t own = HighestBeforeKill(t);
      for (const TrainerLine& line : job_->report(t).lines) {
        if (line.time < kill_time_) continue;
        lost = std::max(lost, own - line.global_step);
        if (line.kind == TrainerLine::kSession) lost = std::max(lost, highest - line.global_step);
      }
    }
    return lost;
  }

  // Steps lost by the last ps restart: from the highest step printed before the kill
  // down to the step training resumed at (the lowest first read of a new session).
  int64_t LostToRestore() {
    int64_t resumed = -1;
    for (int t = 0; t < job_->num_trainers(); ++t) {
      for (const TrainerLine& line : job_->report(t).lines) {
        if (line.time >= kill_time_ && line.kind == TrainerLine::kSession) {
          if (resumed < 0 || line.global_step < resumed) resumed = line.global_step;
          break;
        }
      }
    }
    CHECK(resumed >= 0) << "no session after the kill";
    return std::max<int64_t>(0, HighestBeforeKill(-1) - resumed);
  }

  // Seconds from the restarted server serving to the first step line after it.
  double RestartToStep() {
    Check(job_->Await([&] { return FirstStepAfter(restart_time_) > 0; }, kWait,
                      "a training step after the restart"));
    return FirstStepAfter(restart_time_) - restart_time_;
  }

 private:
  // The highest step trainer `t` (any: t < 0) printed between the previous restart and
  // the last kill (steps printed before the previous restart may have been undone).
  int64_t HighestBeforeKill(int t) {
    int64_t highest = -1;
    for (int i = 0; i < job_->num_trainers(); ++i) {
      if (t >= 0 && i != t) continue;
      for (const TrainerLine& line : job_->report(i).lines) {
        if (line.time >= previous_restart_time_ && line.time < kill_time_) {
          highest = std::max(highest, line.global_step);
        }
      }
    }
    return highest;
  }
  double FirstStepAfter(double since) {
    double first = -1;
    ForLinesSince(since, [&](int, const TrainerLine& line) {
      if (line.kind == TrainerLine::kStep && (first < 0 || line.time < first)) first = line.time;
    });
    return first;
  }
  template <typename Fn>
  void ForLinesSince(double since, Fn fn) {
    for (int t = 0; t < job_->num_trainers(); ++t) {
      for (const TrainerLine& line : job_->report(t).lines) {
        if (line.time >= since) fn(t, line);
      }
    }
  }

  std::unique_ptr<TrainingJob> job_;
  double previous_restart_time_ = 0;
  double kill_time_ = 0;
  double restart_time_ = 0;
};

void Run() {
  std::string dir = "/tmp/overseer-recovery-bench-XXXXXX";
  CHECK(::mkdtemp(dir.data()) != nullptr);
  examples::TrainingJobOptions options;
  options.cluster.num_ps = 2;
  options.cluster.num_workers = 2;
  options.cluster.log_dir = dir + "/logs";
  options.cluster.checkpoint_root = dir + "/checkpoints";
  options.cluster.summary_logdir = dir + "/logdir";
  options.run = "bench";
  options.last_step = 100000;  // The benchmark ends the job, not the trainers.
  options.save_checkpoint_steps = kCheckpointSteps;
  options.log_every = 1;
  absl::StatusOr<std::unique_ptr<TrainingJob>> job = TrainingJob::Start(options);
  Check(job.status());
  Bench bench(*std::move(job));

  bench.Progress();
  bench.KillAndRestart("worker", 1, /*t=*/1);
  const int64_t lost_worker = bench.LostWithoutRestore();
  bench.KillAndRestart("master", 0, /*t=*/-1);
  const int64_t lost_master = bench.LostWithoutRestore();
  std::vector<double> lost_ps, restart_to_step;
  for (int i = 0; i < kPsKills; ++i) {
    // Training resumes just after a checkpoint; these kills land at different points
    // of the interval after it.
    bench.Progress(i * kCheckpointSteps / kPsKills);
    bench.KillAndRestart("ps", 1, /*t=*/-1);
    restart_to_step.push_back(bench.RestartToStep());
    lost_ps.push_back(static_cast<double>(bench.LostToRestore()));
    LOG(INFO) << "ps kill " << i + 1 << ": " << lost_ps.back() << " steps lost, first step "
              << restart_to_step.back() << " s after the restarted ps served";
  }

  bench::PrintFigure("recovery.ps_restart_to_step_s", Median(restart_to_step), "s", 2.0);
  bench::PrintFigure("recovery.lost_steps_master", static_cast<double>(lost_master), "steps", 0);
  bench::PrintFigure("recovery.lost_steps_worker", static_cast<double>(lost_worker), "steps", 0);
  bench::PrintFigure("recovery.lost_steps_ps", *std::max_element(lost_ps.begin(), lost_ps.end()),
                     "steps",
                     static_cast<double>(kCheckpointSteps));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace overseer

int main() {
  overseer::Run();
  return 0;
}
