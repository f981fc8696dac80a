// Benchmark of Conv2D (./dev bench), on the second convolution of the example CNN (a
// batch of 32 14x14x32 images, 5x5x32x64 filters, SAME, stride 1) through Session::Run,
// in GFLOP/s, against two baselines measured in the same interleaved rounds on the
// same thread-pool device:
//   conv2d.gflops: the bound, the convolution's matrix product alone (the window rows
//     laid out once, untimed, then one Eigen contraction with the filter): the share
//     of the time that im2col and the session add.
//   conv2d.gflops_vs_eigen_patches: the convolution as Eigen calls in the form
//     TensorFlow's Eigen spatial convolution takes (extract_image_patches, then one
//     contraction). Debian's Eigen 3.4 has no SpatialConvolution (TensorFlow ships its
//     own, with a patch-packing contraction); this generic form is what Eigen offers.
// Rounds of kWindow seconds of calls each, after a warm-up round (bench_util.h).

#include <cmath>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "client/session/session.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/op_kernel.h"
#include "core/process_settings.h"
#include "core/tensor_eigen.h"
#include "proto/graph.pb.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

constexpr int kRounds = 7;
constexpr double kWindow = 0.5;
constexpr int64_t kBatch = 32, kSize = 14, kIn = 32, kOut = 64, kK = 5;

Tensor Filled(const TensorShape& shape, int salt) {
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.flat<float>()(i) = static_cast<float>((i * 7 + salt) % 13) * 0.05f - 0.3f;
  }
  return t;
}

void Conv2DGflops() {
  const Tensor input = Filled(TensorShape({kBatch, kSize, kSize, kIn}), 1);
  const Tensor filter = Filled(TensorShape({kK, kK, kIn, kOut}), 2);
  GraphDef graph;
  for (const auto& [name, value] : {std::pair{"input", &input}, std::pair{"filter", &filter}}) {
    NodeDef* n = graph.add_node();
    n->set_name(name);
    n->set_op("Const");
    SetNodeAttr(n, "dtype", DT_FLOAT);
    SetNodeAttr(n, "value", *value);
  }
  NodeDef* conv = graph.add_node();
  conv->set_name("conv");
  conv->set_op("Conv2D");
  conv->add_input("input");
  conv->add_input("filter");
  SetNodeAttr(conv, "T", DT_FLOAT);
  SetNodeAttr(conv, "strides", std::vector<int64_t>{1, 1, 1, 1});
  SetNodeAttr(conv, "padding", "SAME");
  auto session = NewSession(SessionOptions());
  CHECK(session.ok()) << session.status();
  CHECK((*session)->Create(graph).ok());
  std::vector<Tensor> outputs;

  // The baseline. NHWC row-major memory is [C, W, H, N] column-major, the layout Eigen's
  // image patches take (depth, rows, cols, batch); a patch comes out as [C, KW, KH], the
  // order of the filter's [KH, KW, C, O] row-major rows.
  using ColMajor4 = Eigen::TensorMap<Eigen::Tensor<const float, 4, Eigen::ColMajor>>;
  using ColMajor2 = Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::ColMajor>>;
  const int64_t patch = kK * kK * kIn, positions = kSize * kSize * kBatch;
  ColMajor4 in(input.data<float>(), kIn, kSize, kSize, kBatch);
  ColMajor2 w(filter.data<float>(), kOut, patch);
  Tensor out(DT_FLOAT, TensorShape({kBatch, kSize, kSize, kOut}));
  Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::ColMajor>> y(out.data<float>(), kOut, positions);
  const Eigen::array<Eigen::IndexPair<Eigen::DenseIndex>, 1> dims = {
      Eigen::IndexPair<Eigen::DenseIndex>(1, 0)};
  const Eigen::array<Eigen::DenseIndex, 2> patches_shape = {patch, positions};
  const auto& device = DefaultEigenDevice();
  const double gflop = 2.0 * positions * patch * kOut / 1e9;

  // The window rows, laid out once: [positions, patch] row-major is [patch, positions]
  // column-major.
  Eigen::Tensor<float, 2, Eigen::ColMajor> rows =
      in.extract_image_patches(kK, kK, 1, 1, 1, 1, Eigen::PADDING_SAME).reshape(patches_shape);
  Tensor bound_out(DT_FLOAT, TensorShape({kBatch, kSize, kSize, kOut}));
  Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::ColMajor>> bound_y(bound_out.data<float>(), kOut,
                                                                     positions);

  bench::Rounds rounds("conv2d.gflops");
  const int in_session = rounds.Add("session", [&] {
    return gflop / bench::MeanSecondsPerCall(
                       [&] {
                         auto s = (*session)->Run({}, {"conv:0"}, {}, &outputs);
                         CHECK(s.ok()) << s;
                       },
                       kWindow);
  });
  const int eigen = rounds.Add("eigen", [&] {
    return gflop / bench::MeanSecondsPerCall(
                       [&] {
                         y.device(device) = w.contract(
                             in.extract_image_patches(kK, kK, 1, 1, 1, 1, Eigen::PADDING_SAME)
                                 .reshape(patches_shape),
                             dims);
                       },
                       kWindow);
  });
  const int gemm = rounds.Add("gemm", [&] {
    return gflop / bench::MeanSecondsPerCall(
                       [&] { bound_y.device(device) = w.contract(rows, dims); }, kWindow);
  });
  rounds.Run(kRounds);
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    CHECK(std::abs(out.data<float>()[i] - outputs[0].data<float>()[i]) < 1e-3)
        << "session and Eigen convolutions differ at " << i;
  }
  bench::PrintFigure("conv2d.gflops", "GFLOP/s", rounds.samples(in_session), rounds.samples(gemm));
  bench::PrintFigure("conv2d.gflops_vs_eigen_patches", "GFLOP/s", rounds.samples(in_session),
                     rounds.samples(eigen));
}

}  // namespace
}  // namespace overseer

int main() {
  overseer::ApplyProcessSettings();  // The servers' settings (docs/settings.md).
  overseer::Conv2DGflops();
  return 0;
}
