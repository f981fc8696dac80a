#include "core/kernels/queue/conditional_accumulator.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

template <typename T>
void AddInto(Tensor* sum, const Tensor& grad) {
  T* s = sum->data<T>();
  const T* g = grad.data<T>();
  for (int64_t i = 0, n = grad.NumElements(); i < n; ++i) s[i] += g[i];
}

template <typename T>
void Scale(Tensor* t, T factor) {
  T* v = t->data<T>();
  for (int64_t i = 0, n = t->NumElements(); i < n; ++i) v[i] *= factor;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> ConditionalAccumulator::Create(
    std::string name, DataType dtype, PartialShape shape, Reduction reduction) {
  if (dtype != DT_FLOAT && dtype != DT_DOUBLE) {
    return absl::InvalidArgumentError(absl::StrCat("ConditionalAccumulator '", name,
                                                   "' accumulates float or double, not ",
                                                   DataTypeString(dtype)));
  }
  if (!shape.KnownElementsFit()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ConditionalAccumulator '", name, "' has too large a shape ", shape.DebugString()));
  }
  return std::shared_ptr<ConditionalAccumulator>(
      new ConditionalAccumulator(std::move(name), dtype, std::move(shape), reduction));
}

ConditionalAccumulator::ConditionalAccumulator(std::string name, DataType dtype, PartialShape shape,
                                               Reduction reduction)
    : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), reduction_(reduction) {}

absl::Status ConditionalAccumulator::MatchesSignature(DataType dtype, const PartialShape& shape,
                                                      Reduction reduction) const {
  if (dtype == dtype_ && shape == shape_ && reduction == reduction_) return absl::OkStatus();
  auto describe = [](DataType d, const PartialShape& s, Reduction r) {
    return absl::StrCat(DataTypeString(d), " ", s.DebugString(),
                        r == Reduction::kMean ? " MEAN" : " SUM");
  };
  return absl::InvalidArgumentError(absl::StrCat("ConditionalAccumulator '", name_, "' exists as ",
                                                 describe(dtype_, shape_, reduction_), ", not ",
                                                 describe(dtype, shape, reduction)));
}

absl::Status ConditionalAccumulator::ApplyGradient(int64_t local_step, const Tensor& grad) {
  if (grad.dtype() != dtype_) {
    return absl::InvalidArgumentError(absl::StrCat("ConditionalAccumulator '", name_, "' takes ",
                                                   DataTypeString(dtype_), " gradients, not ",
                                                   DataTypeString(grad.dtype())));
  }
  if (!shape_.IsCompatibleWith(grad.shape())) {
    return absl::InvalidArgumentError(
        absl::StrCat("ConditionalAccumulator '", name_, "' takes gradients of shape ",
                     shape_.DebugString(), ", not ", grad.shape().DebugString()));
  }
  absl::MutexLock lock(&mu_);
  if (local_step < global_step_) {
    ++stale_dropped_;
    return absl::OkStatus();
  }
  if (count_ == 0) {
    ASSIGN_OR_RETURN(sum_, Tensor::Allocate(dtype_, grad.shape()));  // Zeros.
  } else if (sum_.shape() != grad.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ConditionalAccumulator '", name_, "' holds gradients of shape ",
                     sum_.shape().DebugString(), "; got ", grad.shape().DebugString()));
  }
  if (dtype_ == DT_FLOAT) {
    AddInto<float>(&sum_, grad);
  } else {
    AddInto<double>(&sum_, grad);
  }
  ++count_;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ConditionalAccumulator::TakeGradient(int32_t num_required,
                                                            const QueueWait& wait) {
  if (num_required < 1) {
    return absl::InvalidArgumentError(absl::StrCat("ConditionalAccumulator '", name_,
                                                   "': num_required must be at least 1, got ",
                                                   num_required));
  }
  QueueWaiter waiter(shared_from_this(), &mu_, wait);
  absl::MutexLock lock(&mu_);
  if (takes_cancelled_) return TakesCancelledError();
  const int64_t ticket = next_ticket_++;
  takers_.insert(ticket);
  absl::Status waited = AwaitQueueWait(
      &mu_, waiter,
      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return takes_cancelled_ || (*takers_.begin() == ticket && count_ >= num_required);
      },
      wait, absl::StrCat("take a gradient from ConditionalAccumulator '", name_, "'"));
  takers_.erase(ticket);
  RETURN_IF_ERROR(waited);
  if (takes_cancelled_) return TakesCancelledError();
  Tensor out = std::move(sum_);
  sum_ = Tensor();
  if (reduction_ == Reduction::kMean && count_ > 1) {
    if (dtype_ == DT_FLOAT) {
      Scale<float>(&out, 1.0f / static_cast<float>(count_));
    } else {
      Scale<double>(&out, 1.0 / static_cast<double>(count_));
    }
  }
  count_ = 0;
  ++global_step_;
  return out;
}

void ConditionalAccumulator::CancelTakes() {
  absl::MutexLock lock(&mu_);
  takes_cancelled_ = true;
}

absl::Status ConditionalAccumulator::TakesCancelledError() const {
  return absl::CancelledError(absl::StrCat("takes from ConditionalAccumulator '", name_,
                                           "' were cancelled (the chief's session ended)"));
}

void ConditionalAccumulator::SetGlobalStep(int64_t step) {
  absl::MutexLock lock(&mu_);
  takes_cancelled_ = false;
  if (step < global_step_) {
    LOG(WARNING) << "ConditionalAccumulator '" << name_ << "': global step set back from "
                 << global_step_ << " to " << step;
  }
  global_step_ = step;
}

int64_t ConditionalAccumulator::global_step() const {
  absl::MutexLock lock(&mu_);
  return global_step_;
}

int32_t ConditionalAccumulator::num_accumulated() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

int64_t ConditionalAccumulator::stale_dropped() const {
  absl::MutexLock lock(&mu_);
  return stale_dropped_;
}

std::string ConditionalAccumulator::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat("ConditionalAccumulator '", name_, "' ", DataTypeString(dtype_), " ",
                      shape_.DebugString(), ": ", count_, " gradients at global step ",
                      global_step_);
}

int64_t ConditionalAccumulator::MemoryUsed() const {
  absl::MutexLock lock(&mu_);
  return sum_.IsInitialized() ? static_cast<int64_t>(sum_.TotalBytes()) : 0;
}

}  // namespace overseer
