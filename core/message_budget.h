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
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
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

// Not thread-safe.
class MessageBudget {
 public:
  // `message` names the message in errors ("the RunStep request"); `hint` says what to
  // do instead ("feed smaller tensors"). `limit` bounds the sum of the tensors' sizes.
  MessageBudget(std::string message, std::string hint, int64_t limit = kMaxMessageTensorBytes);

  // Counts a tensor of `bytes` (EncodedTensorBytes) named `name` ("feed 'x:0'").
  void Add(std::string name, int64_t bytes);

  int64_t total() const { return total_; }

  // OK while the tensors fit; otherwise INVALID_ARGUMENT naming the message, its size,
  // the largest tensors with theirs, the limit and the hint.
  absl::Status Check() const;

 private:
  const std::string message_;
  const std::string hint_;
  const int64_t limit_;
  int64_t total_ = 0;
  std::vector<std::pair<int64_t, std::string>> tensors_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_MESSAGE_BUDGET_H_
