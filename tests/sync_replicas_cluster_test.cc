// Synchronous training (cluster_trainer --sync_replicas: SyncReplicasOptimizer, each
// update the mean of both trainers' gradients) on real processes: the worker server
// running the non-chief's ops is SIGKILLed and restarted, then a ps; the chief keeps
// aggregating through the first kill (it does not deadlock waiting for the lost
// worker), both trainers recover from the second, training reaches the same accuracy
// bar as asynchronous training on the same data, and the job ends with every process
// exiting 0 (the chief's end releases the non-chief waiting for a token).
//
// No timing is asserted: each wait has a generous deadline only so a hang fails.

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/training_job.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using examples::TrainingJob;
using examples::TrainingJobOptions;

constexpr int64_t kCheckpointSteps = 50;
constexpr int64_t kMinLastStep = 600;
constexpr absl::Duration kWait = absl::Minutes(5);

TEST(SyncReplicasClusterTest, TrainsThroughAWorkerKillAndAPsKill) {
  TrainingJobOptions options;
  options.cluster.num_ps = 2;
  options.cluster.num_workers = 2;
  options.cluster.log_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/sync");
  options.cluster.worker_flags = {"--exit_when_job_done"};
  options.run = "sync";
  options.last_step = 0;  // Until StopAtStep.
  options.save_checkpoint_steps = kCheckpointSteps;
  options.log_every = 1;
  options.trainer_flags = {"--sync_replicas"};
  auto started = TrainingJob::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<TrainingJob> job = *std::move(started);
  ClusterLauncher& cluster = job->cluster();

  // The non-chief's worker server dies: its trainer recovers once it is back, and the
  // global step goes on meanwhile (the chief's own gradients fill the updates).
  absl::Status progressed = job->Await([&] { return job->CurrentStep() >= 2 * kCheckpointSteps; },
                                       kWait, "global step 100");
  ASSERT_TRUE(progressed.ok()) << progressed;
  absl::StatusOr<int> killed = cluster.Stop("worker", 1, SIGKILL);
  ASSERT_TRUE(killed.ok()) << killed.status();
  const int64_t at_worker_kill = job->CurrentStep();
  progressed = job->Await([&] { return job->CurrentStep() >= at_worker_kill + 20; }, kWait,
                          "the chief to go on alone");
  ASSERT_TRUE(progressed.ok()) << progressed << "\n" << job->TrainerLog(0);
  ASSERT_TRUE(cluster.Restart("worker", 1).ok());
  absl::Status recovered =
      job->Await([&] { return job->report(1).recoveries >= 1; }, kWait, "the non-chief to recover");
  ASSERT_TRUE(recovered.ok()) << recovered << "\n" << job->TrainerLog(1);

  // A ps dies: both recover, the chief from the newest checkpoint.
  const int64_t at_ps_kill = job->CurrentStep();
  progressed = job->Await([&] { return job->CurrentStep() >= at_ps_kill + kCheckpointSteps; },
                          kWait, "training after the worker's return");
  ASSERT_TRUE(progressed.ok()) << progressed;
  killed = cluster.Stop("ps", 1, SIGKILL);
  ASSERT_TRUE(killed.ok()) << killed.status();
  ASSERT_TRUE(cluster.Restart("ps", 1).ok());
  recovered =
      job->Await([&] { return job->report(0).recoveries >= 1; }, kWait, "the chief to recover");
  ASSERT_TRUE(recovered.ok()) << recovered << "\n" << job->TrainerLog(0);
  recovered = job->Await([&] { return job->report(1).recoveries >= 2; }, kWait,
                         "the non-chief to recover again");
  ASSERT_TRUE(recovered.ok()) << recovered << "\n" << job->TrainerLog(1);

  const int64_t last_step = std::max(kMinLastStep, job->CurrentStep() + 4 * kCheckpointSteps);
  ASSERT_TRUE(job->StopAtStep(last_step).ok());
  absl::Status finished = job->WaitForTrainers(kWait);
  ASSERT_TRUE(finished.ok()) << finished;
  for (int t = 0; t < job->num_trainers(); ++t) {
    ASSERT_TRUE(job->report(t).final_accuracy.has_value()) << job->TrainerLog(t);
    // The bar asynchronous training on the same data meets (embedding_cluster_test,
    // supervisor_cluster_test).
    EXPECT_GE(*job->report(t).final_accuracy, 0.9) << "trainer " << t;
  }

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
}

}  // namespace
}  // namespace overseer
