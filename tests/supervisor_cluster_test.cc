// Supervisors across real processes: 2 ps + 2 workers + a master (LocalCluster), a
// checkpoint_store_server, and two replicated_trainer --supervisor processes. The
// non-chief starts first and waits in SessionManager::WaitForSession (released through
// the master's readiness record, or by polling the ready op where the master has none);
// the chief initialises, marks the model ready, checkpoints into the store and writes
// events. Both reach the target accuracy. Then both ps are killed and restarted (their
// variables are gone) and a restarted chief resumes from the latest checkpoint: same
// global step, same accuracy, and its event file starts the session at that step.

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "client/training/saver.h"
#include "core/io/file_system.h"
#include "gtest/gtest.h"
#include "proto/event.pb.h"
#include "summary_writer/event_file_reader.h"
#include "testing/local_cluster.h"
#include "testing/server_process.h"
#include "testing/trainer_process.h"

namespace overseer {
namespace {

constexpr char kTrainer[] = "tests/replicated_trainer";
constexpr int kSteps = 300;
constexpr int kResumeSteps = 50;

// The time of day in seconds of the first log line ("I1129 11:40:25.128491 file:line]
// <message>") whose message starts with `message`, or -1.
double LogTime(const std::string& log, const std::string& message) {
  std::smatch m;
  const std::regex line("[IWE]\\d{4} (\\d\\d):(\\d\\d):(\\d\\d\\.\\d+) \\S+\\] " + message);
  if (!std::regex_search(log, m, line)) return -1;
  return std::stoi(m[1]) * 3600.0 + std::stoi(m[2]) * 60.0 + std::stod(m[3]);
}

// The step of a checkpoint path ".../model.ckpt-<step>", or -1.
int64_t StepOf(const std::string& path) {
  const size_t dash = path.rfind('-');
  return dash == std::string::npos ? -1 : std::stoll(path.substr(dash + 1));
}

// The int64 global_step held by checkpoint `path` ("<location>/<name>"), or -1.
int64_t GlobalStepIn(const std::string& location, const std::string& path) {
  auto where = ResolveCheckpointLocation(location);
  EXPECT_TRUE(where.ok()) << where.status();
  if (!where.ok()) return -1;
  int64_t step = -1;
  const absl::Status read = where->store->ReadTensors(
      where->run, path.substr(path.rfind('/') + 1), {"global_step"},
      [&](const TensorHeader& header, absl::string_view data) {
        if (header.dtype() != DT_INT64 || data.size() != sizeof(step)) {
          return absl::DataLossError("global_step is not an int64 scalar");
        }
        std::memcpy(&step, data.data(), sizeof(step));
        return absl::OkStatus();
      });
  EXPECT_TRUE(read.ok()) << read;
  return step;
}

TEST(SupervisorClusterTest, ChiefAndNonChiefTrainAndARestartedChiefResumes) {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  test::ServerProcess store("checkpoint_store/checkpoint_store_server",
                            {"--root=" + tmp + "/store"});
  ASSERT_GT(store.port(), 0) << store.log();
  test::LocalClusterOptions options;
  options.num_ps = 2;
  options.num_workers = 2;
  auto cluster = test::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  const std::string checkpoints = absl::StrCat("grpc://", store.target(), "/supervised");
  const std::string logs = tmp + "/logs";
  const std::vector<std::string> common = {"--master=" + (*cluster)->master_target(),
                                           "--supervisor", "--checkpoint_dir=" + checkpoints};
  auto args = [&](std::vector<std::string> more) {
    std::vector<std::string> all = common;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };

  // The non-chief starts first: it must wait for the chief.
  TrainerProcess non_chief(kTrainer, "trainer_1",
                           args({"--task_index=1", absl::StrCat("--steps=", kSteps)}));
  TrainerProcess chief(kTrainer, "trainer_0",
                       args({"--task_index=0", "--is_chief", "--summary_dir=" + logs,
                             absl::StrCat("--steps=", kSteps)}));
  ASSERT_EQ(chief.Wait(), 0) << chief.Log();
  ASSERT_EQ(non_chief.Wait(), 0) << non_chief.Log();
  std::printf("chief:\n%s\nnon-chief:\n%s\n", chief.Log().c_str(), non_chief.Log().c_str());

  EXPECT_GE(chief.Value("final accuracy"), 0.97) << chief.Log();
  EXPECT_GE(non_chief.Value("final accuracy"), 0.97) << non_chief.Log();
  // Nothing to restore: the chief initialised (the non-chief may have trained already).
  EXPECT_NE(chief.Log().find("Initialized model on"), std::string::npos) << chief.Log();
  EXPECT_LT(chief.Value("start global_step"), kSteps);
  EXPECT_GE(non_chief.Value("start global_step"), 0);
  EXPECT_GE(chief.Value("global_step"), kSteps);
  EXPECT_GE(non_chief.Value("global_step"), kSteps);
  // From the chief's "Initialized model" (just before it marks the model ready) to the
  // non-chief's "Model is ready" (released and confirmed by the ready op); negative
  // when a poll of the ready op saw the variables initialised before the mark.
  const double initialized = LogTime(chief.Log(), "Initialized model on");
  const double released = LogTime(non_chief.Log(), "Model is ready on");
  ASSERT_GE(initialized, 0) << chief.Log();
  ASSERT_GE(released, 0) << non_chief.Log();
  std::printf("readiness.release_ms: %.1f\n", (released - initialized) * 1000);

  // The chief's last save is the latest checkpoint.
  const std::string saved = chief.Text("saved");
  ASSERT_FALSE(saved.empty()) << chief.Log();
  const int64_t saved_step = StepOf(saved);
  EXPECT_GE(saved_step, kSteps);
  auto latest = LatestCheckpoint(checkpoints);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ(**latest, saved);

  // Both ps lose their variables; a restarted chief resumes from the checkpoint.
  for (int k = 0; k < 2; ++k) ASSERT_TRUE((*cluster)->Stop("ps", k, SIGKILL).ok());
  for (int k = 0; k < 2; ++k) {
    absl::Status restarted = (*cluster)->Restart("ps", k);
    ASSERT_TRUE(restarted.ok()) << restarted;
  }
  TrainerProcess resumed(kTrainer, "trainer_0_restarted",
                         args({"--task_index=0", "--is_chief", "--summary_dir=" + logs,
                               absl::StrCat("--steps=", kResumeSteps)}));
  ASSERT_EQ(resumed.Wait(), 0) << resumed.Log();
  std::printf("restarted chief:\n%s\n", resumed.Log().c_str());
  EXPECT_NE(resumed.Log().find("Restored model from " + saved), std::string::npos) << resumed.Log();
  // The checkpoint named N holds global_step N, though the non-chief may train on while
  // the chief saves (a save is a consistent cut); the restarted chief resumes there.
  const int64_t restored_step = GlobalStepIn(checkpoints, saved);
  EXPECT_EQ(restored_step, saved_step);
  EXPECT_EQ(resumed.Value("start global_step"), restored_step);
  EXPECT_EQ(resumed.Value("global_step"), restored_step + kResumeSteps);
  EXPECT_GE(resumed.Value("final accuracy"), 0.97) << resumed.Log();

  // The restarted chief's events begin the session at the restored step.
  auto files = ListEventFiles(FileSystem::Posix(), logs);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_GE(files->size(), 2u);
  auto events = ReadEventFile(FileSystem::Posix(), logs + "/" + files->back());
  ASSERT_TRUE(events.ok()) << events.status();
  bool started_at_restored_step = false;
  for (const Event& e : *events) {
    if (e.session_log().status() == SessionLog::START && e.step() == restored_step) {
      started_at_restored_step = true;
    }
  }
  EXPECT_TRUE(started_at_restored_step);
}

}  // namespace
}  // namespace overseer
