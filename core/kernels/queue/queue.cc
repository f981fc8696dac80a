#include "core/kernels/queue/queue.h"

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

std::string OptionsString(const QueueOptions& o) {
  std::string s = absl::StrCat(QueueKindName(o.kind), " of capacity ", o.capacity);
  if (o.kind == QueueOptions::Kind::kRandomShuffle) {
    absl::StrAppend(&s, ", min_after_dequeue ", o.min_after_dequeue, ", seeds ", o.seed, "/",
                    o.seed2);
  }
  return s;
}

// Row `i` (along dimension 0) of `t`, copied.
absl::StatusOr<Tensor> Row(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims = t.shape().dim_sizes();
  dims.erase(dims.begin());
  Tensor row(t.dtype(), TensorShape(dims));
  const int64_t n = row.NumElements();
  RETURN_IF_ERROR(VisitAllTypes(t.dtype(), "Queue", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::copy_n(t.data<T>() + i * n, n, row.data<T>());
    return absl::OkStatus();
  }));
  return row;
}

// Copies `element` into `out`, laid out in a slot of shape `slot` (each dimension at
// least the element's; the rest keeps its zeros).
template <typename T>
void CopyPadded(const Tensor& element, const std::vector<int64_t>& slot, T* out) {
  const std::vector<int64_t> dims = element.shape().dim_sizes();
  const T* in = element.data<T>();
  if (dims.empty()) {
    out[0] = in[0];
    return;
  }
  const size_t rank = dims.size();
  const int64_t row = dims[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= dims[d];
  std::vector<int64_t> index(rank, 0);  // Of the current row's first element.
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d) at = at * slot[d] + index[d];
    std::copy_n(in + r * row, row, out + at);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

const char* QueueKindName(QueueOptions::Kind kind) {
  switch (kind) {
    case QueueOptions::Kind::kFifo:
      return "FIFOQueue";
    case QueueOptions::Kind::kRandomShuffle:
      return "RandomShuffleQueue";
    case QueueOptions::Kind::kPaddingFifo:
      return "PaddingFIFOQueue";
  }
  return "Queue";
}

QueueWaiter::QueueWaiter(std::shared_ptr<void> owner, absl::Mutex* mu, const QueueWait& wait)
    : cm_(wait.cancellation), cancelled_(std::make_shared<bool>(false)) {
  if (cm_ == nullptr) return;
  token_ = cm_->RegisterCallback([owner = std::move(owner), mu, flag = cancelled_]() {
    absl::MutexLock lock(mu);
    *flag = true;
  });
  if (token_ == CancellationManager::kInvalidToken) *cancelled_ = true;
}

QueueWaiter::~QueueWaiter() {
  if (cm_ != nullptr && token_ != CancellationManager::kInvalidToken) {
    cm_->DeregisterCallback(token_);
  }
}

absl::Status AwaitQueueWait(absl::Mutex* mu, const QueueWaiter& waiter,
                            const std::function<bool()>& ready, const QueueWait& wait,
                            absl::string_view what) {
  auto cond = [&]() { return waiter.cancelled() || ready(); };
  if (wait.clock == nullptr && DeadlineNeedsClock(wait.deadline)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": QueueWait has a deadline but no clock"));
  }
  const bool done = AwaitOnClock(wait.clock, mu, absl::Condition(&cond), wait.deadline);
  if (waiter.cancelled()) return absl::CancelledError(absl::StrCat(what, " was cancelled"));
  if (!done) return absl::DeadlineExceededError(absl::StrCat("timed out waiting to ", what));
  return absl::OkStatus();
}

// Holds a place in an arrival-ordered line of attempts; leaves it on destruction (with
// the queue's mutex held).
class Queue::Turn {
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

absl::StatusOr<std::shared_ptr<Queue>> Queue::Create(std::string name, std::vector<DataType> types,
                                                     std::vector<PartialShape> shapes,
                                                     const QueueOptions& options) {
  const std::string label = absl::StrCat(QueueKindName(options.kind), " '", name, "'");
  if (types.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(label, " needs at least one component type"));
  }
  if (!shapes.empty() && shapes.size() != types.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, " has ", types.size(), " component types but ", shapes.size(), " shapes"));
  }
  for (DataType t : types) {
    if (!IsSupportedDataType(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, " does not support component dtype ", DataTypeString(t)));
    }
  }
  if (options.kind == QueueOptions::Kind::kRandomShuffle) {
    if (options.min_after_dequeue < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, " needs min_after_dequeue >= 0, got ", options.min_after_dequeue));
    }
    if (options.capacity >= 0 && options.capacity <= options.min_after_dequeue) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, " has capacity ", options.capacity, " but min_after_dequeue ",
                       options.min_after_dequeue, ": no dequeue could ever run"));
    }
  }
  if (options.kind == QueueOptions::Kind::kPaddingFifo) {
    bool ranked = shapes.size() == types.size();
    for (const PartialShape& s : shapes) ranked = ranked && s.known_rank();
    if (!ranked) {
      return absl::InvalidArgumentError(
          absl::StrCat(label,
                       " needs a shape of known rank for every component (dimensions of "
                       "unknown size are padded), got ",
                       ShapesString(shapes)));
    }
  }
  return std::shared_ptr<Queue>(
      new Queue(std::move(name), std::move(types), std::move(shapes), options));
}

Queue::Queue(std::string name, std::vector<DataType> types, std::vector<PartialShape> shapes,
             const QueueOptions& options)
    : name_(std::move(name)),
      types_(std::move(types)),
      shapes_(std::move(shapes)),
      options_(options),
      capacity_(options.capacity),
      label_(absl::StrCat(QueueKindName(options.kind), " '", name_, "'")) {
  absl::MutexLock lock(&mu_);
  if (options.seed == 0 && options.seed2 == 0) {
    std::random_device device;
    rng_.seed((static_cast<uint64_t>(device()) << 32) ^ device());
  } else {
    std::seed_seq seq{static_cast<uint64_t>(options.seed), static_cast<uint64_t>(options.seed2)};
    rng_.seed(seq);
  }
}

absl::Status Queue::MatchesSignature(const std::vector<DataType>& types,
                                     const std::vector<PartialShape>& shapes,
                                     const QueueOptions& options) const {
  if (types != types_ || shapes != shapes_ || !(options == options_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        label_, " exists as a ", OptionsString(options_), " with types ", TypesString(types_),
        " and shapes ", ShapesString(shapes_), "; this op asks for a ", OptionsString(options),
        " with types ", TypesString(types), " and shapes ", ShapesString(shapes)));
  }
  return absl::OkStatus();
}

absl::Status Queue::Validate(const Tuple& tuple, bool batched) const {
  if (tuple.size() != types_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label_, " expects ", types_.size(), " components, got ", tuple.size()));
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    const Tensor& t = tuple[i];
    if (t.dtype() != types_[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat(label_, " component ", i, " has dtype ", DataTypeString(t.dtype()),
                       " but the queue expects ", DataTypeString(types_[i])));
    }
    TensorShape shape = t.shape();
    if (batched) {
      if (shape.dims() == 0 || shape.dim_size(0) != tuple[0].dim_size(0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("EnqueueMany to ", label_, ": component ", i, " of shape ",
                         shape.DebugString(), " does not have the batch size ",
                         tuple[0].dims() == 0 ? 0 : tuple[0].dim_size(0), " of component 0"));
      }
      shape.RemoveDim(0);
    }
    if (!shapes_.empty() && !shapes_[i].IsCompatibleWith(shape)) {
      return absl::InvalidArgumentError(absl::StrCat(label_, " component ", i, " has shape ",
                                                     shape.DebugString(), " but the queue expects ",
                                                     shapes_[i].DebugString()));
    }
  }
  return absl::OkStatus();
}

template <typename Ready>
absl::Status Queue::WaitFor(const Turn& turn, const QueueWaiter& waiter, Ready ready,
                            const QueueWait& wait, absl::string_view what) {
  return AwaitQueueWait(
      &mu_, waiter, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return turn.AtHead() && ready(); }, wait,
      absl::StrCat(what, " on ", label_));
}

bool Queue::HasRoom() const {
  return capacity_ < 0 || static_cast<int64_t>(elements_.size()) < capacity_;
}

int64_t Queue::Available() const {
  const int64_t size = static_cast<int64_t>(elements_.size());
  if (closed_ || options_.kind != QueueOptions::Kind::kRandomShuffle) return size;
  return std::max<int64_t>(0, size - options_.min_after_dequeue);
}

Queue::Tuple Queue::TakeOne() {
  if (options_.kind == QueueOptions::Kind::kRandomShuffle && elements_.size() > 1) {
    std::uniform_int_distribution<size_t> pick(0, elements_.size() - 1);
    std::swap(elements_.front(), elements_[pick(rng_)]);
  }
  Tuple tuple = std::move(elements_.front());
  elements_.pop_front();
  return tuple;
}

absl::Status Queue::ClosedError() const {
  return absl::CancelledError(absl::StrCat(label_, " is closed"));
}

absl::Status Queue::InsufficientError(int64_t requested) const {
  return absl::OutOfRangeError(absl::StrCat(label_,
                                            " is closed and has insufficient elements "
                                            "(requested ",
                                            requested, ", current size ", elements_.size(), ")"));
}

absl::Status Queue::Enqueue(const Tuple& tuple, const QueueWait& wait) {
  RETURN_IF_ERROR(Validate(tuple, /*batched=*/false));
  QueueWaiter waiter(shared_from_this(), &mu_, wait);
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  Turn turn(&enqueuers_, next_ticket_++);
  RETURN_IF_ERROR(WaitFor(
      turn, waiter,
      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cancel_enqueues_ || HasRoom(); }, wait,
      "enqueue"));
  if (cancel_enqueues_) return ClosedError();
  elements_.push_back(tuple);
  return absl::OkStatus();
}

absl::Status Queue::EnqueueMany(const Tuple& batch, const QueueWait& wait) {
  RETURN_IF_ERROR(Validate(batch, /*batched=*/true));
  std::deque<Tuple> rows(batch[0].dim_size(0));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (const Tensor& component : batch) {
      ASSIGN_OR_RETURN(Tensor row, Row(component, static_cast<int64_t>(r)));
      rows[r].push_back(std::move(row));
    }
  }
  QueueWaiter waiter(shared_from_this(), &mu_, wait);
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  Turn turn(&enqueuers_, next_ticket_++);
  while (!rows.empty()) {
    RETURN_IF_ERROR(WaitFor(
        turn, waiter,
        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cancel_enqueues_ || HasRoom(); }, wait,
        "enqueue"));
    if (cancel_enqueues_) return ClosedError();
    while (!rows.empty() && HasRoom()) {
      elements_.push_back(std::move(rows.front()));
      rows.pop_front();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Queue::Tuple> Queue::Dequeue(const QueueWait& wait) {
  QueueWaiter waiter(shared_from_this(), &mu_, wait);
  absl::MutexLock lock(&mu_);
  Turn turn(&dequeuers_, next_ticket_++);
  RETURN_IF_ERROR(WaitFor(
      turn, waiter,
      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return Available() > 0 || closed_; }, wait,
      "dequeue"));
  if (elements_.empty()) return InsufficientError(1);
  return TakeOne();
}

absl::StatusOr<Tensor> Queue::StackComponent(const std::deque<Tuple>& tuples, int c) const {
  const DataType dtype = types_[c];
  const bool pad = options_.kind == QueueOptions::Kind::kPaddingFifo;
  // The shape of one slot: the first element's, or with padding the largest of each
  // dimension (a known dimension of the queue's shape when there are no elements).
  std::vector<int64_t> slot;
  if (!tuples.empty()) {
    slot = tuples[0][c].shape().dim_sizes();
  } else if (!shapes_.empty() && shapes_[c].known_rank()) {
    for (int d = 0; d < shapes_[c].rank(); ++d) {
      slot.push_back(std::max<int64_t>(0, shapes_[c].dim(d)));
    }
  }
  for (size_t i = 1; i < tuples.size(); ++i) {
    const TensorShape& shape = tuples[i][c].shape();
    const bool same_rank = shape.dims() == static_cast<int>(slot.size());
    if (!pad || !same_rank) {
      if (shape.dim_sizes() == slot) continue;
      return absl::InvalidArgumentError(
          absl::StrCat("DequeueMany from ", label_, " cannot stack component ", c,
                       ": element 0 has shape ", tuples[0][c].shape().DebugString(),
                       " but element ", i, " has shape ", shape.DebugString()));
    }
    for (size_t d = 0; d < slot.size(); ++d) slot[d] = std::max(slot[d], shape.dim_size(d));
  }
  std::vector<int64_t> dims = slot;
  dims.insert(dims.begin(), static_cast<int64_t>(tuples.size()));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, TensorShape(dims)));
  int64_t slot_elements = 1;
  for (int64_t d : slot) slot_elements *= d;
  RETURN_IF_ERROR(VisitAllTypes(dtype, "Queue", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < tuples.size(); ++i) {
      T* at = out.data<T>() + static_cast<int64_t>(i) * slot_elements;
      if (tuples[i][c].shape().dim_sizes() == slot) {
        std::copy_n(tuples[i][c].data<T>(), slot_elements, at);
      } else {
        CopyPadded<T>(tuples[i][c], slot, at);
      }
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Queue::Tuple> Queue::DequeueMany(int64_t n, const QueueWait& wait, bool up_to) {
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DequeueMany from ", label_, " needs n >= 0, got ", n));
  }
  QueueWaiter waiter(shared_from_this(), &mu_, wait);
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
        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return Available() > 0 || closed_; }, wait,
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
    while (Available() > 0 && static_cast<int64_t>(taken.size()) < n) {
      taken.push_back(TakeOne());
    }
  }
  Tuple out;
  for (size_t c = 0; c < types_.size(); ++c) {
    auto stacked = StackComponent(taken, static_cast<int>(c));
    if (!stacked.ok()) {
      restore();
      return stacked.status();
    }
    out.push_back(*std::move(stacked));
  }
  return out;
}

void Queue::Close(bool cancel_pending_enqueues) {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  if (cancel_pending_enqueues) cancel_enqueues_ = true;
}

int64_t Queue::Size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(elements_.size());
}

bool Queue::IsClosed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

std::string Queue::DebugString() const { return absl::StrCat(label_, " of ", TypesString(types_)); }

int64_t Queue::MemoryUsed() const {
  absl::MutexLock lock(&mu_);
  int64_t total = 0;
  for (const Tuple& t : elements_) {
    for (const Tensor& c : t) total += static_cast<int64_t>(c.TotalBytes());
  }
  return total;
}

}  // namespace overseer
