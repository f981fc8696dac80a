// The embedding model (examples/classifier.h: pixels as categorical ids, a table split
// into one shard per ps, Adagrad updating only the rows a step read, where they live)
// trained by a chief and a non-chief cluster_trainer on real processes, with the ps
// holding one shard SIGKILLed mid-training and restarted on its port. Then: both
// trainers recovered, the chief resumed from the newest checkpoint committed before the
// kill, training finished with the target accuracy, every checkpoint holds both shards
// and their Adagrad accumulators whole, and the job ended cleanly.
//
// No timing is asserted: each wait has a generous deadline only so a hang fails. The
// trainers have no last step of their own: the test ends the job once the kill is
// behind it.

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store.h"
#include "examples/training_job.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using examples::TrainerLine;
using examples::TrainingJob;
using examples::TrainingJobOptions;

constexpr int64_t kCheckpointSteps = 50;
// The least global step training ends at: the synthetic data's 0.9 needs about 300 steps
// of 50 after the restore in any interleaving of the two trainers.
constexpr int64_t kMinLastStep = 600;
constexpr absl::Duration kWait = absl::Minutes(5);

// The first session line of trainer `t` printed at or after `since`.
const TrainerLine* SessionSince(const TrainingJob& job, int t, double since) {
  for (const TrainerLine& line : job.report(t).lines) {
    if (line.kind == TrainerLine::kSession && line.time >= since) return &line;
  }
  return nullptr;
}

TEST(EmbeddingClusterTest, ShardedTableTrainsSparselyThroughAPsKill) {
  TrainingJobOptions options;
  options.cluster.num_ps = 2;
  options.cluster.num_workers = 2;
  options.cluster.log_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/embedding");
  options.cluster.worker_flags = {"--exit_when_job_done"};
  options.run = "embedding";
  options.last_step = 0;  // Until StopAtStep.
  options.save_checkpoint_steps = kCheckpointSteps;
  options.log_every = 1;
  options.trainer_flags = {"--model=embedding"};
  auto started = TrainingJob::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<TrainingJob> job = *std::move(started);
  ClusterLauncher& cluster = job->cluster();
  auto store = GrpcCheckpointStore::Connect(cluster.address("store", 0));

  // Train past a checkpoint, then kill the ps holding shard 1 (round-robin placement).
  absl::Status progressed = job->Await([&] { return job->CurrentStep() >= 2 * kCheckpointSteps; },
                                       kWait, "global step 100");
  ASSERT_TRUE(progressed.ok()) << progressed;
  absl::StatusOr<std::vector<CheckpointInfo>> before = store->ListCheckpoints("embedding");
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_FALSE(before->empty());
  const int64_t newest_checkpoint = before->back().step();
  const double kill_time = examples::WallSeconds();
  absl::StatusOr<int> killed = cluster.Stop("ps", 1, SIGKILL);
  ASSERT_TRUE(killed.ok()) << killed.status();
  ASSERT_TRUE(cluster.Restart("ps", 1).ok());

  for (int t = 0; t < job->num_trainers(); ++t) {
    absl::Status recovered = job->Await([&] { return job->report(t).recoveries >= 1; }, kWait,
                                        absl::StrCat("trainer ", t, " to recover"));
    ASSERT_TRUE(recovered.ok()) << recovered << "\n" << job->TrainerLog(t);
  }
  const TrainerLine* chief_session = SessionSince(*job, 0, kill_time);
  ASSERT_NE(chief_session, nullptr);
  EXPECT_GE(chief_session->global_step, newest_checkpoint)
      << "the chief did not restore the newest checkpoint";

  const int64_t last_step = std::max(kMinLastStep, job->CurrentStep() + 4 * kCheckpointSteps);
  ASSERT_TRUE(job->StopAtStep(last_step).ok());
  absl::Status finished = job->WaitForTrainers(kWait);
  ASSERT_TRUE(finished.ok()) << finished;
  for (int t = 0; t < job->num_trainers(); ++t) {
    ASSERT_TRUE(job->report(t).final_accuracy.has_value()) << job->TrainerLog(t);
    EXPECT_GE(*job->report(t).final_accuracy, 0.9) << "trainer " << t;
  }

  // Every checkpoint holds both shards and their accumulators, of the table's shape.
  absl::StatusOr<std::vector<CheckpointInfo>> checkpoints = store->ListCheckpoints("embedding");
  ASSERT_TRUE(checkpoints.ok()) << checkpoints.status();
  ASSERT_FALSE(checkpoints->empty());
  EXPECT_GE(checkpoints->back().step(), last_step);
  for (const CheckpointInfo& info : *checkpoints) {
    std::map<std::string, std::vector<int64_t>> shapes;
    absl::Status read = store->ReadTensors("embedding", info.name(), {},
                                           [&](const TensorHeader& header, absl::string_view) {
                                             std::vector<int64_t>& dims = shapes[header.name()];
                                             for (const auto& d : header.shape().dim())
                                               dims.push_back(d.size());
                                             return absl::OkStatus();
                                           });
    ASSERT_TRUE(read.ok()) << info.name() << ": " << read;
    // 784 pixels x 16 levels = 12544 ids, split by id modulo 2: 6272 rows each, 32 wide.
    for (const std::string name : {"embedding/shard_0", "embedding/shard_1",
                                   "embedding/shard_0/Adagrad", "embedding/shard_1/Adagrad"}) {
      EXPECT_EQ(shapes[name], (std::vector<int64_t>{6272, 32})) << info.name() << " " << name;
    }
  }

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
}

}  // namespace
}  // namespace overseer
