// Benchmark of recovery from server crashes (./dev bench), on the training job of the
// cluster demo (examples/training_job.h: master, 2 ps, 2 workers, checkpoint store,
// summary writer, a chief and a non-chief cluster_trainer under
// MonitoredTrainingSession, a checkpoint every kCheckpointSteps global steps). The job
// runs until the benchmark ends it (last_step is out of reach). Servers are killed with
// SIGKILL, one at a time with kProgress steps of training in between, and restarted on
// their ports at once; kKills times each:
//
//   recovery.lost_steps_worker, recovery.lost_steps_master: global steps lost by a
//     worker (worker 1) or master restart: how far a trainer's step fell below one it
//     printed before the kill, or a session created after the kill resumed below the
//     highest step printed before it (0 if nothing went back). Median of the kills
//     (max in "max"). No measured baseline: the goal is 0 (the variables live on the
//     ps, which kept them).
//   recovery.lost_steps_ps: global steps lost by a ps restart (ps 1 loses its
//     variables): the highest step printed before the kill minus the step training
//     resumed at after the chief's restore, for kills made at points spread over the
//     checkpoint interval (what is lost depends on how long ago the last checkpoint
//     was). Median of the kills (max in "max"). No measured baseline: the goal is that
//     every kill loses at most one checkpoint interval, kCheckpointSteps.
//   recovery.ps_startup_s: seconds from the restarted ps's exec to its health check
//     answering SERVING (the launcher retries the check every 20 ms). Baseline: the
//     start-up of a bare gRPC server process (the bench binary re-executed as the raw
//     server, bench/multiprocess.h) from its exec to its first answered ping, started
//     alternately before and after each ps kill; median of per-round ratios.
//   recovery.ps_restart_to_step_s: seconds from the restarted ps's exec (its start-up
//     included) to the first training step of a recovered session, median of the
//     kills. No measured baseline: the goal is <= 2 s.
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
#include "bench/multiprocess.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "examples/training_job.h"

namespace overseer {
namespace {

using examples::TrainerLine;
using examples::TrainingJob;

constexpr int64_t kCheckpointSteps = 50;
constexpr int64_t kProgress = 100;
constexpr int kKills = 5;
constexpr absl::Duration kWait = absl::Minutes(5);

void Check(const absl::Status& s) { CHECK(s.ok()) << s; }

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
    exec_time_ = examples::WallSeconds();
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

  // Seconds from the restarted server's exec to its serving.
  double StartupSeconds() const { return restart_time_ - exec_time_; }

  // Seconds from the restarted server's exec to the first step line of a session that
  // a trainer created after it.
  double RestartToStep() {
    Check(job_->Await([&] { return FirstStepOfNewSession() > 0; }, kWait,
                      "a training step after the restart"));
    return FirstStepOfNewSession() - exec_time_;
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
  // The time of the earliest step line that follows a session line printed after the
  // last exec, over the trainers; -1 if none yet.
  double FirstStepOfNewSession() {
    double first = -1;
    for (int t = 0; t < job_->num_trainers(); ++t) {
      bool new_session = false;
      for (const TrainerLine& line : job_->report(t).lines) {
        if (line.time < exec_time_) continue;
        if (line.kind == TrainerLine::kSession) new_session = true;
        if (new_session && line.kind == TrainerLine::kStep) {
          if (first < 0 || line.time < first) first = line.time;
          break;
        }
      }
    }
    return first;
  }

  std::unique_ptr<TrainingJob> job_;
  double previous_restart_time_ = 0;
  double kill_time_ = 0;
  double exec_time_ = 0;
  double restart_time_ = 0;
};

void Run(const char* argv0) {
  SetMinLogSeverity(LogSeverity::kWarning);
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
  std::vector<double> lost_worker, lost_master;
  for (int i = 0; i < kKills; ++i) {
    bench.KillAndRestart("worker", 1, /*t=*/1);
    lost_worker.push_back(static_cast<double>(bench.LostWithoutRestore()));
    bench::Progress(absl::StrCat("worker kill ", i + 1, " of ", kKills, ": ", lost_worker.back(),
                                 " steps lost"));
  }
  for (int i = 0; i < kKills; ++i) {
    bench.KillAndRestart("master", 0, /*t=*/-1);
    lost_master.push_back(static_cast<double>(bench.LostWithoutRestore()));
    bench::Progress(absl::StrCat("master kill ", i + 1, " of ", kKills, ": ", lost_master.back(),
                                 " steps lost"));
  }
  // ps kills, each in a round with the start of a bare gRPC server process.
  std::vector<double> lost_ps, restart_to_step;
  bench::Rounds rounds("recovery ps restart");
  const int raw_start = rounds.Add("raw_grpc_start", [&] {
    return bench::SecondsOf([&] {
      bench::RawServer raw(argv0);
      raw.Ping();
    });
  });
  const int ps_start = rounds.Add("ps_start", [&] {
    // Training resumes just after a checkpoint; these kills land at different points
    // of the interval after it.
    bench.Progress(static_cast<int64_t>(lost_ps.size()) * kCheckpointSteps / kKills);
    bench.KillAndRestart("ps", 1, /*t=*/-1);
    restart_to_step.push_back(bench.RestartToStep());
    lost_ps.push_back(static_cast<double>(bench.LostToRestore()));
    bench::Progress(absl::StrCat("ps kill ", lost_ps.size(), " of ", kKills, ": ", lost_ps.back(),
                                 " steps lost, first step ", restart_to_step.back(),
                                 " s after the exec"));
    return bench.StartupSeconds();
  });
  rounds.Run(kKills, /*warmup_rounds=*/0);

  bench::PrintFigure("recovery.ps_startup_s", "s", rounds.samples(ps_start),
                     rounds.samples(raw_start));
  bench::PrintFigureWithoutBaseline("recovery.ps_restart_to_step_s", "s", restart_to_step,
                                    "no measured baseline; goal <= 2 s; from the exec of "
                                    "the restarted ps, its start-up included");
  bench::PrintFigureWithoutBaseline("recovery.lost_steps_master", "steps", lost_master,
                                    "no measured baseline; goal 0");
  bench::PrintFigureWithoutBaseline("recovery.lost_steps_worker", "steps", lost_worker,
                                    "no measured baseline; goal 0");
  bench::PrintFigureWithoutBaseline(
      "recovery.lost_steps_ps", "steps", lost_ps,
      absl::StrCat("no measured baseline; goal: every kill (max) <= one checkpoint interval, ",
                   kCheckpointSteps, " steps"));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  // Measure with the settings the servers run with (docs/settings.md).
  overseer::ApplyProcessSettings();
  if (overseer::bench::IsRawServer(argc, argv)) return overseer::bench::RawServerMain(argc, argv);
  overseer::Run(argv[0]);
  return 0;
}
