// Chaos over real processes: one training job (master, 2 ps, 2 workers, a checkpoint
// store, a summary writer, and a chief and a non-chief cluster_trainer under
// MonitoredTrainingSession) during which a worker, a ps, the master, the checkpoint
// store and the summary writer are killed with SIGKILL, one at a time with training
// progress in between, each restarted on its port as an orchestrator would. Then:
//
// - the job finishes and both trainers reach the target test accuracy;
// - every checkpoint the store lists reads back whole (no torn checkpoint);
// - lost steps stay within bounds: after a worker, master, store or writer restart the
//   global step never goes below the highest step printed before the kill (0 lost);
//   after the ps restart the chief restored the newest checkpoint committed before the
//   kill, so it lost only steps since that checkpoint (at most one checkpoint interval,
//   plus the steps the non-chief takes while the chief's save is in flight: the bound
//   asserted is two intervals, which no scheduling on a loaded machine can break);
// - the event files hold one SessionLog START for the start of training and one, at the
//   restored step, for the restart that restored.
//
// No timing is asserted: each wait has a generous deadline only so a hang fails. The
// trainers have no last step of their own: the test ends the job once its last kill
// is behind it, so a fast machine cannot finish training before the kills are done.

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store.h"
#include "core/io/file_system.h"
#include "examples/training_job.h"
#include "gtest/gtest.h"
#include "proto/event.pb.h"
#include "summary_writer/event_file_reader.h"

namespace overseer {
namespace {

using examples::TrainerLine;
using examples::TrainerReport;
using examples::TrainingJob;
using examples::TrainingJobOptions;

constexpr int64_t kCheckpointSteps = 50;
// The least global step training ends at (the target accuracy needs about 600).
constexpr int64_t kMinLastStep = 700;
// Global steps of training between one recovery and the next kill.
constexpr int64_t kProgress = 100;
constexpr absl::Duration kWait = absl::Minutes(5);

// The highest global step trainer `t` (every trainer: t < 0) printed in [from, to).
int64_t HighestStepBetween(const TrainingJob& job, int t, double from, double to) {
  int64_t highest = -1;
  for (int i = 0; i < job.num_trainers(); ++i) {
    if (t >= 0 && i != t) continue;
    for (const TrainerLine& line : job.report(i).lines) {
      if (line.time >= from && line.time < to) highest = std::max(highest, line.global_step);
    }
  }
  return highest;
}

// The first session line of trainer `t` printed at or after `since`.
const TrainerLine* SessionSince(const TrainingJob& job, int t, double since) {
  for (const TrainerLine& line : job.report(t).lines) {
    if (line.kind == TrainerLine::kSession && line.time >= since) return &line;
  }
  return nullptr;
}

// The step of the newest checkpoint the store lists for `run`, or -1.
int64_t NewestCheckpointStep(CheckpointStoreInterface& store, const std::string& run) {
  absl::StatusOr<std::vector<CheckpointInfo>> list = store.ListCheckpoints(run);
  EXPECT_TRUE(list.ok()) << list.status();
  if (!list.ok() || list->empty()) return -1;
  return list->back().step();
}

class ChaosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TrainingJobOptions options;
    options.cluster.num_ps = 2;
    options.cluster.num_workers = 2;
    options.cluster.log_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/chaos");
    options.cluster.worker_flags = {"--exit_when_job_done"};
    // Every event goes to the file at once, so a SIGKILL of the writer loses none
    // that it acknowledged.
    options.cluster.writer_flags = {"--max_queue=1", "--flush_secs=1"};
    options.run = "chaos";
    options.last_step = 0;  // Until StopAtStep.
    options.save_checkpoint_steps = kCheckpointSteps;
    options.log_every = 1;
    auto job = TrainingJob::Start(options);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
  }

  // Waits for kProgress more global steps than `from`.
  void AwaitProgress(int64_t from) {
    absl::Status s = job_->Await([&] { return job_->CurrentStep() >= from + kProgress; }, kWait,
                                 absl::StrCat("global step ", from + kProgress));
    ASSERT_TRUE(s.ok()) << s;
  }

  // SIGKILLs job:index and restarts it on its port.
  void KillAndRestart(const std::string& job, int index) {
    previous_restart_time_ = restart_time_;
    kill_time_ = examples::WallSeconds();
    absl::StatusOr<int> killed = job_->cluster().Stop(job, index, SIGKILL);
    ASSERT_TRUE(killed.ok()) << killed.status();
    absl::Status restarted = job_->cluster().Restart(job, index);
    ASSERT_TRUE(restarted.ok()) << restarted;
    restart_time_ = examples::WallSeconds();
    job_->Poll();
    std::printf("killed and restarted %s:%d at global step %lld\n", job.c_str(), index,
                static_cast<long long>(HighestBeforeKill()));
  }

  // The highest global step printed between the previous restart and the last kill.
  // (Steps printed before the previous restart may have been undone by it.)
  int64_t HighestBeforeKill(int t = -1) const {
    return HighestStepBetween(*job_, t, previous_restart_time_, kill_time_);
  }

  // Waits until trainer `t` has made `count` recoveries.
  void AwaitRecoveries(int t, int64_t count) {
    absl::Status s = job_->Await([&] { return job_->report(t).recoveries >= count; }, kWait,
                                 absl::StrCat("trainer ", t, " to recover"));
    ASSERT_TRUE(s.ok()) << s;
  }

  // 0 steps lost: no trainer printed a step below one it printed before the kill
  // (each trainer's reads of the global step are ordered), and a session created after
  // the kill (read after it) resumed at or above every step printed before the kill.
  void ExpectNoStepLost(const std::string& what) {
    job_->Poll();
    const int64_t highest = HighestBeforeKill();
    for (int t = 0; t < job_->num_trainers(); ++t) {
      const int64_t own = HighestBeforeKill(t);
      for (const TrainerLine& line : job_->report(t).lines) {
        if (line.time < kill_time_) continue;
        EXPECT_GE(line.global_step, own) << what << ": trainer " << t << "'s step went back";
        if (line.kind == TrainerLine::kSession) {
          EXPECT_GE(line.global_step, highest)
              << what << ": trainer " << t << " resumed below the step before the kill";
        }
      }
    }
    std::printf("%s: 0 steps lost (global step %lld before the kill)\n", what.c_str(),
                static_cast<long long>(highest));
  }

  std::unique_ptr<TrainingJob> job_;
  double previous_restart_time_ = 0;
  double kill_time_ = 0;
  double restart_time_ = 0;
};

TEST_F(ChaosTest, TrainingSurvivesTheCrashOfEachKindOfServer) {
  ClusterLauncher& cluster = job_->cluster();
  auto store = GrpcCheckpointStore::Connect(cluster.address("store", 0));

  // 1. A worker: the non-chief's ops run on worker 1; its session is recreated.
  ASSERT_NO_FATAL_FAILURE(AwaitProgress(0));
  ASSERT_NO_FATAL_FAILURE(KillAndRestart("worker", 1));
  ASSERT_NO_FATAL_FAILURE(AwaitRecoveries(1, 1));
  ExpectNoStepLost("worker restart");
  ASSERT_NO_FATAL_FAILURE(AwaitProgress(job_->CurrentStep()));

  // 2. A ps: its variables are lost; the chief restores the newest checkpoint.
  const int64_t chief_recoveries = job_->report(0).recoveries;
  const int64_t non_chief_recoveries = job_->report(1).recoveries;
  const int64_t newest_checkpoint = NewestCheckpointStep(*store, "chaos");
  ASSERT_GE(newest_checkpoint, 0);
  ASSERT_NO_FATAL_FAILURE(KillAndRestart("ps", 1));
  const double ps_kill_time = kill_time_;
  ASSERT_NO_FATAL_FAILURE(AwaitRecoveries(0, chief_recoveries + 1));
  ASSERT_NO_FATAL_FAILURE(AwaitRecoveries(1, non_chief_recoveries + 1));
  // The step training resumed at: the lower of the two trainers' first reads.
  const TrainerLine* chief_session = SessionSince(*job_, 0, ps_kill_time);
  const TrainerLine* non_chief_session = SessionSince(*job_, 1, ps_kill_time);
  ASSERT_NE(chief_session, nullptr);
  ASSERT_NE(non_chief_session, nullptr);
  const int64_t chief_resumed = chief_session->global_step;
  const int64_t resumed = std::min(chief_resumed, non_chief_session->global_step);
  EXPECT_GE(resumed, newest_checkpoint) << "the chief did not restore the newest checkpoint";
  const int64_t lost = HighestBeforeKill() - resumed;
  EXPECT_GE(lost, 0);
  EXPECT_LE(lost, 2 * kCheckpointSteps);
  std::printf("ps restart: resumed at global step %lld (newest checkpoint %lld), %lld steps lost\n",
              static_cast<long long>(resumed), static_cast<long long>(newest_checkpoint),
              static_cast<long long>(lost));
  ASSERT_NO_FATAL_FAILURE(AwaitProgress(job_->CurrentStep()));

  // 3. The master: both trainers' sessions are gone with it; no state is.
  const int64_t chief_before_master = job_->report(0).recoveries;
  const int64_t non_chief_before_master = job_->report(1).recoveries;
  ASSERT_NO_FATAL_FAILURE(KillAndRestart("master", 0));
  ASSERT_NO_FATAL_FAILURE(AwaitRecoveries(0, chief_before_master + 1));
  ASSERT_NO_FATAL_FAILURE(AwaitRecoveries(1, non_chief_before_master + 1));
  ExpectNoStepLost("master restart");
  ASSERT_NO_FATAL_FAILURE(AwaitProgress(job_->CurrentStep()));

  // 4. The checkpoint store: training goes on and a later checkpoint is committed.
  ASSERT_NO_FATAL_FAILURE(KillAndRestart("store", 0));
  const int64_t store_restart_step = HighestBeforeKill();
  absl::Status saved =
      job_->Await([&] { return NewestCheckpointStep(*store, "chaos") > store_restart_step; }, kWait,
                  "a checkpoint after the store's restart");
  ASSERT_TRUE(saved.ok()) << saved;
  ExpectNoStepLost("store restart");

  // 5. The summary writer: training goes on.
  ASSERT_NO_FATAL_FAILURE(AwaitProgress(job_->CurrentStep()));
  ASSERT_NO_FATAL_FAILURE(KillAndRestart("writer", 0));
  ASSERT_NO_FATAL_FAILURE(AwaitProgress(HighestBeforeKill()));
  ExpectNoStepLost("writer restart");

  // The kills are done: the job ends a checkpoint interval on, at the target accuracy.
  const int64_t last_step = std::max(job_->MaxStep() + kCheckpointSteps, kMinLastStep);
  ASSERT_TRUE(job_->StopAtStep(last_step).ok());
  std::printf("training ends at global step %lld\n", static_cast<long long>(last_step));
  absl::Status finished = job_->WaitForTrainers(kWait);
  ASSERT_TRUE(finished.ok()) << finished;
  for (int t = 0; t < job_->num_trainers(); ++t) {
    const TrainerReport& report = job_->report(t);
    ASSERT_TRUE(report.final_accuracy.has_value()) << job_->TrainerLog(t);
    EXPECT_GE(*report.final_accuracy, 0.97) << "trainer " << t;
    EXPECT_GE(report.last->global_step, last_step - 2) << "trainer " << t;
  }

  // Every checkpoint the store lists reads back whole.
  absl::StatusOr<std::vector<CheckpointInfo>> checkpoints = store->ListCheckpoints("chaos");
  ASSERT_TRUE(checkpoints.ok()) << checkpoints.status();
  ASSERT_FALSE(checkpoints->empty());
  for (const CheckpointInfo& info : *checkpoints) {
    int tensors = 0;
    absl::Status read =
        store->ReadTensors("chaos", info.name(), {}, [&](const TensorHeader&, absl::string_view) {
          ++tensors;
          return absl::OkStatus();
        });
    EXPECT_TRUE(read.ok()) << info.name() << ": " << read;
    EXPECT_GT(tensors, 0) << info.name();
  }
  EXPECT_GE(checkpoints->back().step(), last_step);

  // Job done: ps and workers exit 0; the rest drain on SIGTERM and exit 0.
  for (const auto& [name, index] : cluster.servers()) {
    if (name != "ps" && name != "worker") continue;
    absl::StatusOr<int> code = cluster.WaitForExit(name, index, kWait);
    ASSERT_TRUE(code.ok()) << name << ":" << index << " " << code.status();
    EXPECT_EQ(*code, 0) << name << ":" << index;
  }
  for (const std::string name : {"master", "store", "writer"}) {
    absl::StatusOr<int> code = cluster.Stop(name, 0, SIGTERM);
    ASSERT_TRUE(code.ok()) << name << " " << code.status();
    EXPECT_EQ(*code, 0) << name << ":\n" << cluster.Log(name, 0);
  }

  // One START at the start of training and one where the chief restored after the ps
  // restart; every event file reads back without damage.
  FileSystem* fs = FileSystem::Posix();
  absl::StatusOr<std::vector<std::string>> files = ListEventFiles(fs, job_->summary_dir());
  ASSERT_TRUE(files.ok()) << files.status();
  std::vector<int64_t> start_steps;
  for (const std::string& file : *files) {
    absl::StatusOr<std::vector<Event>> events = ReadEventFile(fs, job_->summary_dir() + "/" + file);
    ASSERT_TRUE(events.ok()) << file << ": " << events.status();
    for (const Event& event : *events) {
      if (event.has_session_log() && event.session_log().status() == SessionLog::START) {
        start_steps.push_back(event.step());
      }
    }
  }
  ASSERT_EQ(start_steps.size(), 2u)
      << "START events at steps: " << absl::StrJoin(start_steps, ", ");
  EXPECT_LT(start_steps[0], newest_checkpoint);
  // At the restored step, which the chief read after the restore.
  EXPECT_GE(start_steps[1], newest_checkpoint);
  EXPECT_LE(start_steps[1], chief_resumed);
}

}  // namespace
}  // namespace overseer
