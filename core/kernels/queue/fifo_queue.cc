#include "core/kernels/queue/fifo_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/kernels/array/kernel_util.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

std::string ShapesString(const std::vector<PartialShape>& shapes) {
  return absl::StrCat(
      "[",
      absl::StrJoin(shapes, ",",
                    [](std::string* out, const PartialShape& s) { out->append(s.DebugString()); }),
      "]");
}

std::string TypesString(const std::vector<DataType>& types) {
  return absl::StrCat(
      "[",
      absl::StrJoin(types, ",",
                    [](std::string* out, DataType t) { out->append(DataTypeString(t)); }),
      "]");
}

// Row `i` (along dimension 0) of `t`, copied.
absl::StatusOr<Tensor> Row(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims = t.shape().dim_sizes();
  dims.erase(dims.begin());
  Tensor row(t.dtype(), TensorShape(dims));
  const int64_t n = row.NumElements();
  RETURN_IF_ERROR(VisitAllTypes(t.dtype(), "FIFOQueue", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::copy_n(t.data<T>() + i * n, n, row.data<T>());
    return absl::OkStatus();
  }));
  return row;
}

// Stacks component `c` of every tuple along a new dimension 0. INVALID_ARGUMENT if the
// shapes differ.
absl::StatusOr<Tensor> Stack(const std::deque<FIFOQueue::Tuple>& tuples, int c, DataType dtype,
                             const TensorShape& empty_shape) {
  if (tuples.empty()) {
    std::vector<int64_t> dims = empty_shape.dim_sizes();
    dims.insert(dims.begin(), 0);
    return Tensor::Allocate(dtype, TensorShape(dims));
  }
  const TensorShape& shape = tuples[0][c].shape();
  std::vector<int64_t> dims = shape.dim_sizes();
  dims.insert(dims.begin(), static_cast<int64_t>(tuples.size()));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, TensorShape(dims)));
  const int64_t n = tuples[0][c].NumElements();
  for (size_t i = 0; i < tuples.size(); ++i) {
    if (tuples[i][c].shape() != shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DequeueMany cannot stack component ", c, ": element 0 has shape ", shape.DebugString(),
          " but element ", i, " has shape ", tuples[i][c].shape().DebugString()));
    }
  }
  RETURN_IF_ERROR(VisitAllTypes(dtype, "FIFOQueue", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < tuples.size(); ++i) {
      std::copy_n(tuples[i][c].data<T>(), n, out.data<T>() + i * n);
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace

// One blocking attempt's registration with the step's CancellationManager. The callback
// sets `cancelled` under the queue's mutex, which wakes the waiting condition; it holds
// the queue and the flag alive, since deregistration does not wait for a running
// callback.
class FIFOQueue::Waiter {
 public:
  Waiter(FIFOQueue* queue, const QueueWait& wait)
      : cm_(wait.cancellation), cancelled_(std::make_shared<bool>(false)) {
    if (cm_ == nullptr) return;
    token_ = cm_->RegisterCallback([q = queue->shared_from_this(), flag = cancelled_]() {
      absl::MutexLock lock(&q->mu_);
      *flag = true;
    });
    if (token_ == CancellationManager::kInvalidToken) *cancelled_ = true;
  }
  ~Waiter() {
    if (cm_ != nullptr && token_ != CancellationManager::kInvalidToken) {
      cm_->DeregisterCallback(token_);
    }
  }
  // Read with the queue's mutex held.
  bool cancelled() const { return *cancelled_; }

 private:
  CancellationManager* cm_;
  CancellationManager::Token token_ = CancellationManager::kInvalidToken;
  std::shared_ptr<bool> cancelled_;
};

// Holds a place in an arrival-ordered line of attempts; leaves it on destruction (with
// the queue's mutex held).
class FIFOQueue::Turn {
 public:
  Turn(std::set<int64_t>* line, int64_t ticket) : line_(line), ticket_(ticket) {
    line_->insert(ticket_);
  }
  ~Turn() { line_->erase(ticket_); }
  bool AtHead() const { return *line_->begin() == ticket_; }

 private:
  std::set<int64_t>* line_;
  const int64_t ticket_;
};

absl::StatusOr<std::shared_ptr<FIFOQueue>> FIFOQueue::Create(std::string name,
                                                             std::vector<DataType> types,
                                                             std::vector<PartialShape> shapes,
                                                             int64_t capacity) {
  if (types.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FIFOQueue '", name, "' needs at least one component type"));
  }
  if (!shapes.empty() && shapes.size() != types.size()) {
    return absl::InvalidArgumentError(absl::StrCat("FIFOQueue '", name, "' has ", types.size(),
                                                   " component types but ", shapes.size(),
                                                   " shapes"));
  }
  for (DataType t : types) {
    if (!IsSupportedDataType(t)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FIFOQueue '", name, "' does not support component dtype ", DataTypeString(t)));
    }
  }
  return std::shared_ptr<FIFOQueue>(
      new FIFOQueue(std::move(name), std::move(types), std::move(shapes), capacity));
}

FIFOQueue::FIFOQueue(std::string name, std::vector<DataType> types,
                     std::vector<PartialShape> shapes, int64_t capacity)
    : name_(std::move(name)),
      types_(std::move(types)),
      shapes_(std::move(shapes)),
      capacity_(capacity) {}

absl::Status FIFOQueue::MatchesSignature(const std::vector<DataType>& types,
                                         const std::vector<PartialShape>& shapes,
                                         int64_t capacity) const {
  if (types != types_ || shapes != shapes_ || capacity != capacity_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FIFOQueue '", name_, "' exists with types ", TypesString(types_), ", shapes ",
        ShapesString(shapes_), " and capacity ", capacity_, "; this op asks for types ",
        TypesString(types), ", shapes ", ShapesString(shapes), " and capacity ", capacity));
  }
  return absl::OkStatus();
}

absl::Status FIFOQueue::Validate(const Tuple& tuple, bool batched) const {
  if (tuple.size() != types_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FIFOQueue '", name_, "' expects ", types_.size(), " components, got ", tuple.size()));
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    const Tensor& t = tuple[i];
    if (t.dtype() != types_[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FIFOQueue '", name_, "' component ", i, " has dtype ", DataTypeString(t.dtype()),
          " but the queue expects ", DataTypeString(types_[i])));
    }
    TensorShape shape = t.shape();
    if (batched) {
      if (shape.dims() == 0 || shape.dim_size(0) != tuple[0].dim_size(0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("EnqueueMany to FIFOQueue '", name_, "': component ", i, " of shape ",
                         shape.DebugString(), " does not have the batch size ",
                         tuple[0].dims() == 0 ? 0 : tuple[0].dim_size(0), " of component 0"));
      }
      shape.RemoveDim(0);
    }
    if (!shapes_.empty() && !shapes_[i].IsCompatibleWith(shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat("FIFOQueue '", name_, "' component ", i, " has shape ", shape.DebugString(),
                       " but the queue expects ", shapes_[i].DebugString()));
    }
  }
  return absl::OkStatus();
}

template <typename Ready>
absl::Status FIFOQueue::WaitFor(const Turn& turn, const Waiter& waiter, Ready ready,
                                const QueueWait& wait, absl::string_view what) {
  auto cond = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return waiter.cancelled() || (turn.AtHead() && ready());
  };
  if (wait.clock == nullptr && DeadlineNeedsClock(wait.deadline)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " on FIFOQueue '", name_, "': QueueWait has a deadline but no clock"));
  }
  const bool done = AwaitOnClock(wait.clock, &mu_, absl::Condition(&cond), wait.deadline);
  if (waiter.cancelled()) {
    return absl::CancelledError(absl::StrCat(what, " on FIFOQueue '", name_, "' was cancelled"));
  }
  if (!done) {
    return absl::DeadlineExceededError(
        absl::StrCat("timed out waiting to ", what, " on FIFOQueue '", name_, "'"));
  }
  return absl::OkStatus();
}

absl::Status FIFOQueue::ClosedError() const {
  return absl::CancelledError(absl::StrCat("FIFOQueue '", name_, "' is closed"));
}

absl::Status FIFOQueue::InsufficientError(int64_t requested) const {
  return absl::OutOfRangeError(absl::StrCat("FIFOQueue '", name_,
                                            "' is closed and has insufficient elements "
                                            "(requested ",
                                            requested, ", current size ", elements_.size(), ")"));
}

absl::Status FIFOQueue::Enqueue(const Tuple& tuple, const QueueWait& wait) {
  RETURN_IF_ERROR(Validate(tuple, /*batched=*/false));
  Waiter waiter(this, wait);
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  Turn turn(&enqueuers_, next_ticket_++);
  RETURN_IF_ERROR(WaitFor(
      turn, waiter,
      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return cancel_enqueues_ || capacity_ < 0 ||
               static_cast<int64_t>(elements_.size()) < capacity_;
      },
      wait, "enqueue"));
  if (cancel_enqueues_) return ClosedError();
  elements_.push_back(tuple);
  return absl::OkStatus();
}

absl::Status FIFOQueue::EnqueueMany(const Tuple& batch, const QueueWait& wait) {
  RETURN_IF_ERROR(Validate(batch, /*batched=*/true));
  std::deque<Tuple> rows(batch[0].dim_size(0));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (const Tensor& component : batch) {
      ASSIGN_OR_RETURN(Tensor row, Row(component, static_cast<int64_t>(r)));
      rows[r].push_back(std::move(row));
    }
  }
  Waiter waiter(this, wait);
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  Turn turn(&enqueuers_, next_ticket_++);
  while (!rows.empty()) {
    RETURN_IF_ERROR(WaitFor(
        turn, waiter,
        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return cancel_enqueues_ || capacity_ < 0 ||
                 static_cast<int64_t>(elements_.size()) < capacity_;
        },
        wait, "enqueue"));
    if (cancel_enqueues_) return ClosedError();
    while (!rows.empty() && (capacity_ < 0 || static_cast<int64_t>(elements_.size()) < capacity_)) {
      elements_.push_back(std::move(rows.front()));
      rows.pop_front();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<FIFOQueue::Tuple> FIFOQueue::Dequeue(const QueueWait& wait) {
  Waiter waiter(this, wait);
  absl::MutexLock lock(&mu_);
  Turn turn(&dequeuers_, next_ticket_++);
  RETURN_IF_ERROR(WaitFor(
      turn, waiter,
      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !elements_.empty() || closed_; }, wait,
      "dequeue"));
  if (elements_.empty()) return InsufficientError(1);
  Tuple tuple = std::move(elements_.front());
  elements_.pop_front();
  return tuple;
}

absl::StatusOr<FIFOQueue::Tuple> FIFOQueue::DequeueMany(int64_t n, const QueueWait& wait,
                                                        bool up_to) {
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DequeueMany from FIFOQueue '", name_, "' needs n >= 0, got ", n));
  }
  Waiter waiter(this, wait);
  absl::MutexLock lock(&mu_);
  Turn turn(&dequeuers_, next_ticket_++);
  std::deque<Tuple> taken;
  // Puts what this attempt took back at the front, in order.
  auto restore = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!taken.empty()) {
      elements_.push_front(std::move(taken.back()));
      taken.pop_back();
    }
  };
  while (static_cast<int64_t>(taken.size()) < n) {
    absl::Status s = WaitFor(
        turn, waiter,
        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !elements_.empty() || closed_; }, wait,
        "dequeue");
    if (!s.ok()) {
      restore();
      return s;
    }
    if (elements_.empty()) {
      if (up_to && !taken.empty()) break;  // Closed: what is left.
      restore();
      return InsufficientError(n);
    }
    while (!elements_.empty() && static_cast<int64_t>(taken.size()) < n) {
      taken.push_back(std::move(elements_.front()));
      elements_.pop_front();
    }
  }
  Tuple out;
  for (size_t c = 0; c < types_.size(); ++c) {
    const bool known = !shapes_.empty() && shapes_[c].IsFullyDefined();
    auto stacked = Stack(taken, static_cast<int>(c), types_[c],
                         known ? shapes_[c].ToTensorShape() : TensorShape());
    if (!stacked.ok()) {
      restore();
      return stacked.status();
    }
    out.push_back(*std::move(stacked));
  }
  return out;
}

void FIFOQueue::Close(bool cancel_pending_enqueues) {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  if (cancel_pending_enqueues) cancel_enqueues_ = true;
}

int64_t FIFOQueue::Size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(elements_.size());
}

bool FIFOQueue::IsClosed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

std::string FIFOQueue::DebugString() const {
  return absl::StrCat("FIFOQueue '", name_, "' of ", TypesString(types_));
}

int64_t FIFOQueue::MemoryUsed() const {
  absl::MutexLock lock(&mu_);
  int64_t total = 0;
  for (const Tuple& t : elements_) {
    for (const Tensor& c : t) total += static_cast<int64_t>(c.TotalBytes());
  }
  return total;
}

}  // namespace overseer
