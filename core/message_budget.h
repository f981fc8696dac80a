#ifndef OVERSEER_CORE_MESSAGE_BUDGET_H_
#define OVERSEER_CORE_MESSAGE_BUDGET_H_

// Protobuf cannot serialize or parse a message of 2 GiB or more, and gRPC's generated
// code misbehaves on one (a size that wraps past 4 GiB even overruns its buffer). The
// messages that carry tensors whole (RunStep's feeds and fetches, RunGraph's, the
// callables') are therefore checked before they are built: MessageBudget adds up the
// encoded size of each tensor going into one message and, when they cannot fit, says
// so naming the largest. Tensors between tasks (RecvTensor) are streamed in chunks and
// have no such limit.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "proto/tensor.pb.h"

namespace overseer {

// The largest message protobuf serializes: 2 GiB - 1 byte.
inline constexpr int64_t kMaxProtoMessageBytes = std::numeric_limits<int32_t>::max();
// Room kept in a message for everything but its tensors' contents (names, shapes,
// metadata).
inline constexpr int64_t kMessageOverheadBytes = int64_t{1} << 20;
// What the tensors of one message may add up to by default.
inline constexpr int64_t kMaxMessageTensorBytes = kMaxProtoMessageBytes - kMessageOverheadBytes;

// About how many bytes `t` takes in a TensorProto (at least its contents; strings with
// their per-element framing). Does not build the proto.
int64_t EncodedTensorBytes(const Tensor& t);
// The same for a TensorProto already built (its exact encoded size).
int64_t EncodedTensorBytes(const TensorProto& t);

// Adds up the sizes of the tensors of one message; names them only for an error, so
// that the check costs a few additions per step. Not thread-safe.
//
//   MessageBudget budget;
//   for (...) budget.Add(EncodedTensorBytes(t));
//   if (!budget.fits()) return budget.Error("the RunStep request", "feed less", name_of);
class MessageBudget {
 public:
  // `limit` bounds the sum of the tensors' sizes.
  explicit MessageBudget(int64_t limit = kMaxMessageTensorBytes) : limit_(limit) {}

  // Counts tensor number `size()` (from 0, in the order added), of `bytes`.
  void Add(int64_t bytes) {
    total_ += bytes;
    sizes_.push_back(bytes);
  }

  int64_t total() const { return total_; }
  int64_t limit() const { return limit_; }
  size_t size() const { return sizes_.size(); }
  bool fits() const { return total_ <= limit_; }

  // INVALID_ARGUMENT naming `message` ("the RunStep request"), its size, the largest
  // tensors with theirs (`name_of(i)` names tensor i, e.g. "feed 'x:0'"), the limit and
  // `hint` (what to do instead). Precondition: !fits().
  absl::Status Error(absl::string_view message, absl::string_view hint,
                     const std::function<std::string(size_t)>& name_of) const;

 private:
  const int64_t limit_;
  int64_t total_ = 0;
  absl::InlinedVector<int64_t, 8> sizes_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_MESSAGE_BUDGET_H_
