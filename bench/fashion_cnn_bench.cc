// Benchmark of the example CNN's training step (./dev bench): TensorFlow's
// Fashion-MNIST convnet (examples/classifier.h: two 5x5 convolutions of 32 and 64
// filters with 2x2 max pooling, a dense layer of 1024, softmax, Adam) on batches of 32
// images, one train step per Session::Run (dropout's keep_prob fed 1), in images per
// second, against the same forward pass, backward pass and Adam update written as raw
// Eigen contractions and loops (window rows laid out, products on the same thread-pool
// device, pooling by the window's argmax), measured in the same interleaved rounds:
//   fashion_cnn.images_per_sec: what the graph, the executor and the kernels cost over
//     the arithmetic; goal ratio >= 0.8.
// Rounds of kWindow seconds of steps each, after a warm-up round (bench_util.h).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "client/session/client_session.h"
#include "core/logging.h"
#include "core/op_kernel.h"
#include "core/process_settings.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

constexpr int kRounds = 5;
constexpr double kWindow = 2.0;
constexpr int64_t kBatch = 32;

using Mat = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
using Vec = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>>;
using Pair = Eigen::IndexPair<Eigen::DenseIndex>;
const Eigen::array<Pair, 1> kAB = {Pair(1, 0)};   // A B
const Eigen::array<Pair, 1> kAtB = {Pair(0, 0)};  // A' B
const Eigen::array<Pair, 1> kABt = {Pair(1, 1)};  // A B'

// A parameter with its gradient and Adam's moments.
struct Param {
  Param(std::vector<int64_t> dims, std::mt19937* rng) : dims(std::move(dims)) {
    int64_t n = 1;
    for (int64_t d : this->dims) n *= d;
    std::normal_distribution<float> init(0, 0.05f);
    value.resize(n);
    if (this->dims.size() > 1) {
      for (float& v : value) v = init(*rng);
    }
    grad.assign(n, 0);
    m.assign(n, 0);
    v.assign(n, 0);
  }
  Mat matrix() { return Mat(value.data(), dims[0], static_cast<int64_t>(value.size()) / dims[0]); }
  Vec flat(std::vector<float>& x) { return Vec(x.data(), static_cast<int64_t>(x.size())); }
  std::vector<int64_t> dims;
  std::vector<float> value, grad, m, v;
};

// The window rows of 5x5 SAME windows of src [n, side, side, c]: [n*side*side, 25*c],
// each row (kh, kw, c) as the filter's [5, 5, c, out] rows.
void Im2Col(const float* src, int64_t n, int64_t side, int64_t c, float* rows) {
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t y = 0; y < side; ++y) {
      for (int64_t x = 0; x < side; ++x) {
        float* row = rows + ((b * side + y) * side + x) * 25 * c;
        for (int64_t kh = 0; kh < 5; ++kh) {
          for (int64_t kw = 0; kw < 5; ++kw, row += c) {
            const int64_t sy = y + kh - 2, sx = x + kw - 2;
            if (sy < 0 || sy >= side || sx < 0 || sx >= side) {
              std::fill(row, row + c, 0.0f);
            } else {
              std::copy_n(src + ((b * side + sy) * side + sx) * c, c, row);
            }
          }
        }
      }
    }
  }
}

// The inverse: each window row's gradient added back to the pixels it came from.
void Col2Im(const float* rows, int64_t n, int64_t side, int64_t c, float* dst) {
  std::fill(dst, dst + n * side * side * c, 0.0f);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t y = 0; y < side; ++y) {
      for (int64_t x = 0; x < side; ++x) {
        const float* row = rows + ((b * side + y) * side + x) * 25 * c;
        for (int64_t kh = 0; kh < 5; ++kh) {
          for (int64_t kw = 0; kw < 5; ++kw, row += c) {
            const int64_t sy = y + kh - 2, sx = x + kw - 2;
            if (sy < 0 || sy >= side || sx < 0 || sx >= side) continue;
            float* to = dst + ((b * side + sy) * side + sx) * c;
            for (int64_t k = 0; k < c; ++k) to[k] += row[k];
          }
        }
      }
    }
  }
}

// 2x2 max pooling, stride 2, of src [n, side, side, c]; arg holds each max's index.
void MaxPool(const float* src, int64_t n, int64_t side, int64_t c, float* out, int64_t* arg) {
  const int64_t half = side / 2;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t y = 0; y < half; ++y) {
      for (int64_t x = 0; x < half; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          int64_t best = ((b * side + 2 * y) * side + 2 * x) * c + k;
          for (int64_t dy = 0; dy < 2; ++dy) {
            for (int64_t dx = 0; dx < 2; ++dx) {
              const int64_t i = ((b * side + 2 * y + dy) * side + 2 * x + dx) * c + k;
              if (src[i] > src[best]) best = i;
            }
          }
          const int64_t o = ((b * half + y) * half + x) * c + k;
          out[o] = src[best];
          arg[o] = best;
        }
      }
    }
  }
}

// The CNN's train step as raw Eigen contractions and loops.
class RawCnn {
 public:
  explicit RawCnn(int64_t n)
      : n_(n),
        rng_(1),
        w1_({25, 32}, &rng_),
        b1_({32}, &rng_),
        w2_({800, 64}, &rng_),
        b2_({64}, &rng_),
        w3_({3136, 1024}, &rng_),
        b3_({1024}, &rng_),
        w4_({1024, 10}, &rng_),
        b4_({10}, &rng_),
        p1_(n * 784 * 25),
        y1_(n * 784 * 32),
        pool1_(n * 196 * 32),
        arg1_(n * 196 * 32),
        p2_(n * 196 * 800),
        y2_(n * 196 * 64),
        flat_(n * 3136),
        arg2_(n * 3136),
        h_(n * 1024),
        logits_(n * 10),
        dlogits_(n * 10),
        dh_(n * 1024),
        dflat_(n * 3136),
        dy2_(n * 196 * 64),
        dp2_(n * 196 * 800),
        dpool1_(n * 196 * 32),
        dy1_(n * 784 * 32) {}

  // One step; returns the batch's mean loss before it.
  float Step(const float* images, const int64_t* labels) {
    const auto& d = DefaultEigenDevice();
    // Forward.
    Im2Col(images, n_, 28, 1, p1_.data());
    Dense(d, p1_, n_ * 784, 25, w1_, b1_, y1_, true);
    MaxPool(y1_.data(), n_, 28, 32, pool1_.data(), arg1_.data());
    Im2Col(pool1_.data(), n_, 14, 32, p2_.data());
    Dense(d, p2_, n_ * 196, 800, w2_, b2_, y2_, true);
    MaxPool(y2_.data(), n_, 14, 64, flat_.data(), arg2_.data());
    Dense(d, flat_, n_, 3136, w3_, b3_, h_, true);
    Dense(d, h_, n_, 1024, w4_, b4_, logits_, false);
    // Softmax cross-entropy: d(mean loss)/d(logits) = (softmax - one_hot) / n.
    float loss = 0;
    for (int64_t b = 0; b < n_; ++b) {
      float* l = logits_.data() + b * 10;
      const float top = *std::max_element(l, l + 10);
      float sum = 0;
      for (int k = 0; k < 10; ++k) sum += std::exp(l[k] - top);
      loss += (std::log(sum) + top - l[labels[b]]) / static_cast<float>(n_);
      for (int k = 0; k < 10; ++k) {
        dlogits_[b * 10 + k] =
            (std::exp(l[k] - top) / sum - (k == labels[b] ? 1.0f : 0.0f)) / static_cast<float>(n_);
      }
    }
    // Backward.
    Back(d, h_, n_, 1024, w4_, b4_, dlogits_, 10, &dh_);
    ReluGrad(h_, &dh_);
    Back(d, flat_, n_, 3136, w3_, b3_, dh_, 1024, &dflat_);
    std::fill(dy2_.begin(), dy2_.end(), 0.0f);
    for (size_t i = 0; i < dflat_.size(); ++i) dy2_[arg2_[i]] += dflat_[i];
    ReluGrad(y2_, &dy2_);
    Back(d, p2_, n_ * 196, 800, w2_, b2_, dy2_, 64, &dp2_);
    Col2Im(dp2_.data(), n_, 14, 32, dpool1_.data());
    std::fill(dy1_.begin(), dy1_.end(), 0.0f);
    for (size_t i = 0; i < dpool1_.size(); ++i) dy1_[arg1_[i]] += dpool1_[i];
    ReluGrad(y1_, &dy1_);
    Back(d, p1_, n_ * 784, 25, w1_, b1_, dy1_, 32, nullptr);
    // Adam.
    ++t_;
    const float lr_t = 0.001f * std::sqrt(1 - std::pow(0.999f, t_)) / (1 - std::pow(0.9f, t_));
    for (Param* p : {&w1_, &b1_, &w2_, &b2_, &w3_, &b3_, &w4_, &b4_}) {
      Vec value = p->flat(p->value), grad = p->flat(p->grad), m = p->flat(p->m), v = p->flat(p->v);
      m.device(d) = m + (grad - m) * 0.1f;
      v.device(d) = v + (grad.square() - v) * 0.001f;
      value.device(d) = value - m * lr_t / (v.sqrt() + 1e-8f);
    }
    return loss;
  }

 private:
  // out [rows, w.cols] = x [rows, cols] w + b, relu'd if asked.
  static void Dense(const Eigen::ThreadPoolDevice& d, std::vector<float>& x, int64_t rows,
                    int64_t cols, Param& w, Param& b, std::vector<float>& out, bool relu) {
    const int64_t o = w.dims[1];
    Mat in(x.data(), rows, cols), y(out.data(), rows, o);
    const Eigen::array<Eigen::DenseIndex, 2> one_row = {1, o}, tile = {rows, 1};
    auto sum =
        in.contract(w.matrix(), kAB) + Vec(b.value.data(), o).reshape(one_row).broadcast(tile);
    if (relu) {
      y.device(d) = sum.cwiseMax(0.0f);
    } else {
      y.device(d) = sum;
    }
  }

  // From dy [rows, o] of out = x w + b: w's and b's gradients, and x's into dx if given.
  static void Back(const Eigen::ThreadPoolDevice& d, std::vector<float>& x, int64_t rows,
                   int64_t cols, Param& w, Param& b, std::vector<float>& dy, int64_t o,
                   std::vector<float>* dx) {
    Mat in(x.data(), rows, cols), grad(dy.data(), rows, o);
    Mat dw(w.grad.data(), cols, o);
    dw.device(d) = in.contract(grad, kAtB);
    const Eigen::array<Eigen::DenseIndex, 1> down = {0};
    Vec(b.grad.data(), o).device(d) = grad.sum(down);
    if (dx != nullptr) Mat(dx->data(), rows, cols).device(d) = grad.contract(w.matrix(), kABt);
  }

  static void ReluGrad(const std::vector<float>& y, std::vector<float>* dy) {
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] <= 0) (*dy)[i] = 0;
    }
  }

  const int64_t n_;
  std::mt19937 rng_;
  Param w1_, b1_, w2_, b2_, w3_, b3_, w4_, b4_;
  std::vector<float> p1_, y1_, pool1_;
  std::vector<int64_t> arg1_;
  std::vector<float> p2_, y2_, flat_;
  std::vector<int64_t> arg2_;
  std::vector<float> h_, logits_, dlogits_, dh_, dflat_, dy2_, dp2_, dpool1_, dy1_;
  int t_ = 0;
};

void FashionCnnImagesPerSec() {
  examples::TrainTest data = examples::MakeSynthetic(kBatch * 8, 10, 1);
  Scope root = Scope::NewRootScope();
  examples::ClassifierOptions options;
  options.model = examples::ModelKind::kCnn;
  auto model = examples::BuildClassifier(root, options);
  CHECK(model.ok()) << model.status();
  ResourceMgr resources;
  SessionOptions session_options;
  session_options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, session_options);
  CHECK(session.ok()) << session.status();
  CHECK((*session)->Run({}, {}, {model->init}, nullptr).ok());
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 8; ++i) {
    Tensor x, y;
    data.train.Batch(i * kBatch, kBatch, &x, &y);
    xs.push_back(x);
    ys.push_back(y);
  }
  // The baseline learns: its loss on one batch falls (its gradients are right).
  RawCnn raw(kBatch);
  const float first = raw.Step(xs[0].data<float>(), ys[0].data<int64_t>());
  float last = first;
  for (int i = 0; i < 20; ++i) last = raw.Step(xs[0].data<float>(), ys[0].data<int64_t>());
  CHECK(last < first / 2) << "the raw Eigen CNN does not learn: loss " << first << " -> " << last;
  int next = 0;
  bench::Rounds rounds("fashion_cnn");
  const int session_rate = rounds.Add("session", [&] {
    return kBatch / bench::MeanSecondsPerCall(
                        [&] {
                          const int i = next++ % 8;
                          auto s = (*session)->Run({{model->images, xs[i]},
                                                    {model->labels, ys[i]},
                                                    {model->keep_prob, Tensor::Scalar(1.0f)}},
                                                   {}, {model->train}, nullptr);
                          CHECK(s.ok()) << s;
                        },
                        kWindow);
  });
  const int eigen_rate = rounds.Add("eigen", [&] {
    return kBatch / bench::MeanSecondsPerCall(
                        [&] {
                          const int i = next++ % 8;
                          raw.Step(xs[i].data<float>(), ys[i].data<int64_t>());
                        },
                        kWindow);
  });
  rounds.Run(kRounds);
  bench::PrintFigure("fashion_cnn.images_per_sec", "images/s", rounds.samples(session_rate),
                     rounds.samples(eigen_rate));
}

}  // namespace
}  // namespace overseer

int main() {
  overseer::ApplyProcessSettings();  // The servers' settings (docs/settings.md).
  overseer::FashionCnnImagesPerSec();
  return 0;
}
