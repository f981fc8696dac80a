// Benchmark of sparse embedding updates (./dev bench): one Adagrad step on a table of
// 262144 rows of 64 floats (64 MiB, plus its 64 MiB accumulator) whose gradient names
// 4096 distinct rows (a batch's lookups after deduplication), through Session::Run:
//   embedding.sparse_update_rows_per_sec: rows updated per second by SparseApplyAdagrad
//     (the optimizers' update of a gradient with a sparse form: only the rows named);
//     baseline: the same step as a dense update, ApplyAdagrad with the gradient scattered
//     into a table-sized tensor (what an update without sparse gradients does), its rate
//     counted in the same 4096 useful rows. The ratio is the speedup, not a bound.
// Both gradients are fed (by reference, no copy). Rounds of kWindow seconds of steps
// each, after a warm-up round (bench_util.h).

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/graph/variables_init.h"
#include "client/session/client_session.h"
#include "core/logging.h"
#include "core/process_settings.h"

namespace overseer {
namespace {

constexpr int kRounds = 7;
constexpr double kWindow = 0.5;
constexpr int64_t kRows = 262144, kDim = 64, kUpdated = 4096;

void SparseUpdateRowsPerSec() {
  Scope root = Scope::NewRootScope();
  const TensorShape shape({kRows, kDim});
  Variable table = MakeVariable(root.WithOpName("table"), ZerosInitializer(shape));
  Variable accum = MakeVariable(root.WithOpName("accum"), ConstantInitializer(shape, 0.1));
  Output values = ops::Placeholder(root.WithOpName("values"), DT_FLOAT);
  Output indices = ops::Placeholder(root.WithOpName("indices"), DT_INT64);
  Output dense = ops::Placeholder(root.WithOpName("dense"), DT_FLOAT);
  Output lr = ops::Const(root, 0.01f);
  Operation sparse_step(
      ops::SparseApplyAdagrad(root.WithOpName("sparse"), table.ref, accum.ref, lr, values, indices)
          .node());
  Operation dense_step(
      ops::ApplyAdagrad(root.WithOpName("dense_step"), table.ref, accum.ref, lr, dense).node());
  CHECK(root.ok()) << root.status();
  auto session = ClientSession::Create(root);
  CHECK(session.ok()) << session.status();
  CHECK((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr).ok());

  // Distinct rows spread over the table, and their gradient, sparse and dense.
  std::mt19937_64 rng(1);
  std::vector<int64_t> all(kRows);
  for (int64_t i = 0; i < kRows; ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  Tensor rows(DT_INT64, TensorShape({kUpdated}));
  Tensor grad(DT_FLOAT, TensorShape({kUpdated, kDim}));
  Tensor dense_grad(DT_FLOAT, shape);  // Zeros.
  std::uniform_real_distribution<float> g(-1, 1);
  for (int64_t i = 0; i < kUpdated; ++i) {
    rows.data<int64_t>()[i] = all[i];
    for (int64_t j = 0; j < kDim; ++j) {
      const float v = g(rng);
      grad.data<float>()[i * kDim + j] = v;
      dense_grad.data<float>()[all[i] * kDim + j] = v;
    }
  }
  const std::vector<FeedPair> sparse_feeds = {{values, grad}, {indices, rows}};
  const std::vector<FeedPair> dense_feeds = {{dense, dense_grad}};

  bench::Rounds rounds("embedding.sparse_update");
  const int sparse = rounds.Add("sparse", [&] {
    return kUpdated / bench::MeanSecondsPerCall(
                          [&] {
                            auto s = (*session)->Run(sparse_feeds, {}, {sparse_step}, nullptr);
                            CHECK(s.ok()) << s;
                          },
                          kWindow);
  });
  const int dense_rate = rounds.Add("dense", [&] {
    return kUpdated / bench::MeanSecondsPerCall(
                          [&] {
                            auto s = (*session)->Run(dense_feeds, {}, {dense_step}, nullptr);
                            CHECK(s.ok()) << s;
                          },
                          kWindow);
  });
  rounds.Run(kRounds);
  bench::PrintFigure("embedding.sparse_update_rows_per_sec", "rows/s", rounds.samples(sparse),
                     rounds.samples(dense_rate));
}

}  // namespace
}  // namespace overseer

int main() {
  overseer::ApplyProcessSettings();  // The servers' settings (docs/settings.md).
  overseer::SparseUpdateRowsPerSec();
  return 0;
}
