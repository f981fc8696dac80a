#include "examples/training_job.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace overseer {
namespace examples {
namespace {

constexpr char kTrainerBinary[] = "examples/cluster_trainer";

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingJob>> TrainingJob::Start(TrainingJobOptions options) {
  if (options.cluster.log_dir.empty()) {
    return absl::InvalidArgumentError("TrainingJobOptions.cluster.log_dir must be set");
  }
  options.cluster.checkpoint_store = true;
  options.cluster.summary_writer = true;
  // Before starting any server: a missing trainer fails the job at once.
  absl::StatusOr<std::string> trainer_bin = FindBinary(options.cluster.bin_dir, kTrainerBinary);
  if (!trainer_bin.ok()) return trainer_bin.status();

  std::unique_ptr<TrainingJob> job(new TrainingJob(options));
  std::remove(job->stop_file().c_str());  // A previous job's in the same directory.
  absl::StatusOr<std::unique_ptr<ClusterLauncher>> cluster =
      ClusterLauncher::Start(options.cluster);
  if (!cluster.ok()) return cluster.status();
  job->cluster_ = *std::move(cluster);
  absl::StatusOr<std::unique_ptr<DirectoryWatch>> watch =
      DirectoryWatch::Create(options.cluster.log_dir);
  if (!watch.ok()) return watch.status();
  job->watch_ = *std::move(watch);

  const ClusterLauncher& c = *job->cluster_;
  job->trainers_.resize(options.cluster.num_workers);
  // Non-chiefs first: they wait for the chief's model, as they may in a real cluster.
  for (int i = options.cluster.num_workers - 1; i >= 0; --i) {
    std::vector<std::string> args = {
        "--master=" + c.master_target(),
        absl::StrCat("--task_index=", i),
        absl::StrCat("--num_ps=", options.cluster.num_ps),
        absl::StrCat("--num_workers=", options.cluster.num_workers),
        absl::StrCat("--last_step=", options.last_step),
        "--stop_file=" + job->stop_file(),
        absl::StrCat("--log_every=", options.log_every),
        absl::StrCat("--save_checkpoint_steps=", options.save_checkpoint_steps),
        absl::StrCat("--checkpoint_dir=", c.store_target(), "/", options.run),
        absl::StrCat("--summary_dir=", c.writer_target(), "/", options.run),
    };
    const std::string name = absl::StrCat("trainer_", i);
    args.push_back(
        absl::StrCat("--metrics_port_file=", options.cluster.log_dir, "/", name, ".metrics_port"));
    if (i == 0) args.push_back("--is_chief");
    if (options.synthetic_data) args.push_back("--synthetic");
    args.insert(args.end(), options.trainer_flags.begin(), options.trainer_flags.end());
    TrainerProcessOptions trainer_options;
    trainer_options.bin_dir = options.cluster.bin_dir;
    trainer_options.log_dir = options.cluster.log_dir;
    trainer_options.separate_stderr = true;  // Lines to follow on stdout, the log on stderr.
    Trainer& trainer = job->trainers_[i];
    trainer.process =
        std::make_unique<TrainerProcess>(kTrainerBinary, name, std::move(args), trainer_options);
    if (!trainer.process->start_status().ok()) return trainer.process->start_status();
  }
  return job;
}

absl::StatusOr<int> TrainingJob::TrainerMetricsPort(int trainer) const {
  if (trainer < 0 || trainer >= num_trainers()) {
    return absl::NotFoundError(absl::StrCat("no trainer ", trainer));
  }
  const std::string path =
      absl::StrCat(options_.cluster.log_dir, "/trainer_", trainer, ".metrics_port");
  std::ifstream in(path);
  int port = -1;
  if (!(in >> port) || port <= 0) {
    return absl::NotFoundError(
        absl::StrCat("trainer ", trainer, " wrote no metrics port to ", path));
  }
  return port;
}

std::string TrainingJob::stop_file() const { return options_.cluster.log_dir + "/stop_at_step"; }

absl::Status TrainingJob::StopAtStep(int64_t step) {
  const std::string tmp = stop_file() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << step << "\n";
    if (!out.flush()) return absl::InternalError("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), stop_file().c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", stop_file()));
  }
  return absl::OkStatus();
}

std::string TrainingJob::checkpoint_dir() const {
  return absl::StrCat(cluster_->options().checkpoint_root, "/", options_.run);
}

std::string TrainingJob::summary_dir() const {
  return absl::StrCat(cluster_->options().summary_logdir, "/", options_.run);
}

void TrainingJob::Poll() {
  for (int i = 0; i < num_trainers(); ++i) {
    Trainer& t = trainers_[i];
    // Note the exit first, so that the lines read below include its last ones.
    const bool exited = !t.report.exit_code.has_value() && !t.process->IsRunning();
    for (const std::string& text : t.process->NewLines()) {
      const TrainerLine line = ParseTrainerLine(text);
      if (line.kind == TrainerLine::kOther) continue;
      if (listener_) listener_(i, line);
      if (line.kind == TrainerLine::kFinal) {
        t.report.final_accuracy = line.accuracy;
        continue;
      }
      t.report.lines.push_back(line);
      t.report.last = line;
      t.report.recoveries = std::max(t.report.recoveries, line.recoveries);
      if (line.kind == TrainerLine::kSession) t.report.sessions = line.session;
    }
    if (exited) t.report.exit_code = t.process->last_exit_code();
  }
}

int64_t TrainingJob::CurrentStep() const {
  const TrainerLine* latest = nullptr;
  for (const Trainer& t : trainers_) {
    if (t.report.last && (latest == nullptr || t.report.last->time > latest->time)) {
      latest = &*t.report.last;
    }
  }
  return latest == nullptr ? -1 : latest->global_step;
}

int64_t TrainingJob::MaxStep() const {
  int64_t max = -1;
  for (const Trainer& t : trainers_) {
    for (const TrainerLine& line : t.report.lines) max = std::max(max, line.global_step);
  }
  return max;
}

int64_t TrainingJob::MinRecoveries() const {
  int64_t min = -1;
  for (const Trainer& t : trainers_) {
    if (min < 0 || t.report.recoveries < min) min = t.report.recoveries;
  }
  return std::max<int64_t>(min, 0);
}

bool TrainingJob::TrainersExited() const {
  return std::all_of(trainers_.begin(), trainers_.end(),
                     [](const Trainer& t) { return t.report.exit_code.has_value(); });
}

std::string TrainingJob::TrainerLog(int trainer) const {
  return trainers_[trainer].process->ErrorLog();
}

absl::Status TrainingJob::CheckTrainers(bool all_exited_is_error, absl::string_view what) const {
  for (int i = 0; i < num_trainers(); ++i) {
    const TrainerReport& r = trainers_[i].report;
    if (r.exit_code.has_value() && *r.exit_code != 0) {
      return absl::InternalError(absl::StrCat("trainer ", i, " exited with code ", *r.exit_code,
                                              " while waiting for ", what, "; its log:\n",
                                              TrainerLog(i)));
    }
  }
  if (all_exited_is_error && TrainersExited()) {
    return absl::InternalError(absl::StrCat("every trainer exited before ", what));
  }
  return absl::OkStatus();
}

absl::Status TrainingJob::Await(const std::function<bool()>& done, absl::Duration timeout,
                                absl::string_view what, const std::function<void()>& tick) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    Poll();
    if (tick) tick();
    if (done()) return absl::OkStatus();
    if (absl::Status s = CheckTrainers(/*all_exited_is_error=*/true, what); !s.ok()) return s;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("still waiting for ", what, " after ",
                                                      absl::FormatDuration(timeout),
                                                      " (global step ", CurrentStep(), ")"));
    }
    // A trainer's exit writes nothing to watch, hence the bound on one wait.
    watch_->Wait(std::min(left, absl::Milliseconds(100)));
  }
}

absl::Status TrainingJob::WaitForTrainers(absl::Duration timeout,
                                          const std::function<void()>& tick) {
  absl::Status s =
      Await([this] { return TrainersExited(); }, timeout, "the trainers to finish", tick);
  if (!s.ok()) return s;
  return CheckTrainers(/*all_exited_is_error=*/false, "the trainers to finish");
}

}  // namespace examples
}  // namespace overseer
