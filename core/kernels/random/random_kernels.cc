// CPU kernels of RandomUniform, RandomNormal and TruncatedNormal on std::mt19937_64.

#include <cmath>
#include <cstdint>
#include <random>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

// Uniform in [0, 1) with the full mantissa precision of T.
template <typename T>
T Uniform01(std::mt19937_64& gen) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(gen() >> 40) * (1.0f / 16777216.0f);  // 24 bits
  } else {
    return static_cast<double>(gen() >> 11) * (1.0 / 9007199254740992.0);  // 53 bits
  }
}

// Fills `out` with `n` samples. Normals come in Box-Muller pairs computed in double.
template <typename T>
void Sample(Distribution dist, std::mt19937_64& gen, T* out, int64_t n) {
  if (dist == Distribution::kUniform) {
    for (int64_t i = 0; i < n; ++i) out[i] = Uniform01<T>(gen);
    return;
  }
  const double kTwoPi = 6.283185307179586;
  int64_t i = 0;
  while (i < n) {
    const double u1 = 1.0 - Uniform01<double>(gen);  // (0, 1]: log is finite.
    const double u2 = Uniform01<double>(gen);
    const double r = std::sqrt(-2.0 * std::log(u1));
    for (double z : {r * std::cos(kTwoPi * u2), r * std::sin(kTwoPi * u2)}) {
      if (i == n) break;
      if (dist == Distribution::kTruncatedNormal && std::fabs(z) > 2.0) continue;
      out[i++] = static_cast<T>(z);
    }
  }
}

template <Distribution kDist>
class RandomOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    int64_t seed, seed2;
    RETURN_IF_ERROR(c->GetAttr("seed", &seed));
    RETURN_IF_ERROR(c->GetAttr("seed2", &seed2));
    absl::MutexLock lock(&mu_);
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      std::seed_seq seq{device(), device(), device(), device()};
      gen_.seed(seq);
    } else {
      const uint64_t a = static_cast<uint64_t>(seed), b = static_cast<uint64_t>(seed2);
      std::seed_seq seq{static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32),
                        static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32)};
      gen_.seed(seq);
    }
    return absl::OkStatus();
  }

  // Draws from the kernel's generator, which advances across calls.
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(TensorShape shape, ShapeFromTensor(ctx->input(0), "shape"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return VisitFloatTypes(out->dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      absl::MutexLock lock(&mu_);
      Sample<T>(kDist, gen_, out->data<T>(), out->NumElements());
      return absl::OkStatus();
    });
  }

 private:
  absl::Mutex mu_;
  std::mt19937_64 gen_ ABSL_GUARDED_BY(mu_);
};
REGISTER_KERNEL(RandomOp<Distribution::kUniform>, "RandomUniform");
REGISTER_KERNEL(RandomOp<Distribution::kNormal>, "RandomNormal");
REGISTER_KERNEL(RandomOp<Distribution::kTruncatedNormal>, "TruncatedNormal");

}  // namespace
}  // namespace overseer
