// Checkpoints are consistent cuts across trainers and ps (issue 22): two adam_trainer
// processes train Adam concurrently through one master on 2 ps + 2 workers
// (LocalCluster) while the chief saves 20 checkpoints into a checkpoint_store_server.
// The gradient is constant, so the optimizer's state after N steps depends on N alone:
// in every checkpoint "model.ckpt-N", global_step is N, beta1_power and beta2_power are
// beta^(N+1) exactly (N locked multiplications), and the Adam slots m and v of w0 (on
// ps:0) and of w1 (on ps:1) are those of N updates, everywhere in both tensors. A
// checkpoint copied while steps update the variables (TensorFlow's Saver, or this one
// without the update gate) fails all of that.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "gtest/gtest.h"
#include "testing/local_cluster.h"
#include "testing/server_process.h"
#include "testing/trainer_process.h"

namespace overseer {
namespace {

constexpr char kTrainer[] = "tests/adam_trainer";
constexpr int kSteps = 250;  // Per trainer.
constexpr int kSaves = 20;
constexpr int64_t kSize = 1 << 16;
constexpr float kBeta1 = 0.99f;
constexpr float kBeta2 = 0.999f;

// A checkpoint's tensors, as floats (global_step apart).
struct Checkpoint {
  int64_t global_step = -1;
  std::map<std::string, std::vector<float>> floats;
};

Checkpoint Read(CheckpointLocation& where, const std::string& name) {
  Checkpoint c;
  auto headers = where.store->ListTensors(where.run, name);
  EXPECT_TRUE(headers.ok()) << headers.status();
  if (!headers.ok()) return c;
  std::vector<std::string> names;
  for (const TensorHeader& h : *headers) names.push_back(h.name());
  const absl::Status read = where.store->ReadTensors(
      where.run, name, names, [&](const TensorHeader& header, absl::string_view data) {
        if (header.name() == "global_step") {
          if (header.dtype() != DT_INT64 || data.size() != sizeof(int64_t)) {
            return absl::DataLossError("global_step is not an int64 scalar");
          }
          std::memcpy(&c.global_step, data.data(), sizeof(int64_t));
          return absl::OkStatus();
        }
        if (header.dtype() != DT_FLOAT) {
          return absl::DataLossError(absl::StrCat(header.name(), " is not float"));
        }
        std::vector<float>& v = c.floats[header.name()];
        v.resize(data.size() / sizeof(float));
        std::memcpy(v.data(), data.data(), v.size() * sizeof(float));
        return absl::OkStatus();
      });
  EXPECT_TRUE(read.ok()) << read;
  return c;
}

// The Adam state after each number of steps, as the kernels compute it in float.
struct Replay {
  explicit Replay(int64_t steps) {
    float p1 = kBeta1, p2 = kBeta2, m = 0, v = 0;
    for (int64_t n = 0; n <= steps; ++n) {
      beta1_power.push_back(p1);
      beta2_power.push_back(p2);
      this->m.push_back(m);
      this->v.push_back(v);
      p1 *= kBeta1;
      p2 *= kBeta2;
      m += (1.0f - m) * (1.0f - kBeta1);
      v += (1.0f - v) * (1.0f - kBeta2);
    }
  }
  // The number of steps whose value of `series` is closest to `value` (the kernels may
  // round a slot's last bit differently; consecutive steps differ by far more).
  static int64_t Closest(const std::vector<float>& series, float value) {
    int64_t best = 0;
    for (int64_t n = 1; n < static_cast<int64_t>(series.size()); ++n) {
      if (std::fabs(series[n] - value) < std::fabs(series[best] - value)) best = n;
    }
    return best;
  }
  std::vector<float> beta1_power, beta2_power, m, v;
};

// Every element of `values` equals its first (the gradient is the same everywhere).
bool Uniform(const std::vector<float>& values) {
  for (float x : values) {
    if (x != values.front()) return false;
  }
  return true;
}

TEST(ConsistentCheckpointTest, EveryCheckpointIsTheStateAfterItsGlobalStep) {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  test::ServerProcess store("checkpoint_store/checkpoint_store_server",
                            {"--root=" + tmp + "/store"});
  ASSERT_GT(store.port(), 0) << store.log();
  test::LocalClusterOptions options;
  options.num_ps = 2;
  options.num_workers = 2;
  auto cluster = test::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  const std::string checkpoints = absl::StrCat("grpc://", store.target(), "/adam");
  const std::vector<std::string> common = {
      "--master=" + (*cluster)->master_target(), absl::StrCat("--steps=", kSteps),
      absl::StrCat("--size=", kSize), absl::StrCat("--beta1=", kBeta1),
      absl::StrCat("--beta2=", kBeta2)};
  auto args = [&](std::vector<std::string> more) {
    std::vector<std::string> all = common;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  TrainerProcess non_chief(kTrainer, "trainer_1", args({"--task_index=1"}));
  TrainerProcess chief(kTrainer, "trainer_0",
                       args({"--task_index=0", "--is_chief", "--checkpoint_dir=" + checkpoints,
                             absl::StrCat("--saves=", kSaves)}));
  ASSERT_EQ(chief.Wait(), 0) << chief.Log();
  ASSERT_EQ(non_chief.Wait(), 0) << non_chief.Log();
  // The trainer that ends last sees every step.
  EXPECT_EQ(std::max(chief.Value("global_step"), non_chief.Value("global_step")), 2 * kSteps)
      << chief.Log() << non_chief.Log();

  auto where = ResolveCheckpointLocation(checkpoints);
  ASSERT_TRUE(where.ok()) << where.status();
  auto listed = where->store->ListCheckpoints(where->run);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), static_cast<size_t>(kSaves)) << chief.Log();

  const Replay replay(2 * kSteps);
  int mid_training = 0;  // Checkpoints taken while both trainers ran.
  for (const CheckpointInfo& info : *listed) {
    SCOPED_TRACE(info.name());
    int64_t named = -1;
    ASSERT_TRUE(absl::StartsWith(info.name(), "model.ckpt-"));
    ASSERT_TRUE(absl::SimpleAtoi(info.name().substr(std::strlen("model.ckpt-")), &named));
    const Checkpoint c = Read(*where, info.name());
    EXPECT_EQ(c.global_step, named);
    ASSERT_GE(c.global_step, 0);
    ASSERT_LE(c.global_step, 2 * kSteps);
    if (c.global_step > 0 && c.global_step < 2 * kSteps) ++mid_training;
    const int64_t n = c.global_step;
    ASSERT_EQ(c.floats.count("beta1_power"), 1u);
    ASSERT_EQ(c.floats.count("beta2_power"), 1u);
    EXPECT_EQ(c.floats.at("beta1_power").at(0), replay.beta1_power[n]);
    EXPECT_EQ(c.floats.at("beta2_power").at(0), replay.beta2_power[n]);
    for (const char* var : {"w0", "w1"}) {
      for (const auto& [slot, series] :
           std::vector<std::pair<std::string, const std::vector<float>*>>{
               {absl::StrCat(var, "/Adam"), &replay.m},
               {absl::StrCat(var, "/Adam_1"), &replay.v}}) {
        SCOPED_TRACE(slot);
        ASSERT_EQ(c.floats.count(slot), 1u);
        const std::vector<float>& values = c.floats.at(slot);
        ASSERT_EQ(values.size(), static_cast<size_t>(kSize));
        EXPECT_TRUE(Uniform(values)) << "first " << values.front() << ", last " << values.back();
        EXPECT_EQ(Replay::Closest(*series, values.front()), n) << values.front();
      }
    }
  }
  // Most saves happen while the global step moves (k * 2 * steps / 21).
  EXPECT_GE(mid_training, kSaves / 2);
  std::printf("%d of %d checkpoints taken mid-training; chief:\n%s\n", mid_training, kSaves,
              chief.Log().c_str());
}

}  // namespace
}  // namespace overseer
