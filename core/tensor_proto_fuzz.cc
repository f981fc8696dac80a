// Fuzzes TensorProto -> Tensor, the path of every Const value, feed and fetched result
// that arrives over the network: any bytes get a tensor or a status, never a crash or
// an allocation the message did not pay for (the tensor memory budget is 256 MiB here,
// under libFuzzer's 2 GB RSS limit).

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/tensor.h"
#include "proto/tensor.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool budget = [] {
    overseer::SetTensorMemoryBudget(uint64_t{256} << 20);
    return true;
  }();
  (void)budget;
  overseer::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<overseer::Tensor> tensor = overseer::Tensor::FromProto(proto);
  // Up to 64Ki elements (a second copy of a larger one could pass the budget; a string
  // tensor's budget counts its std::string objects, not its bytes): what parsed
  // converts back and parses again to the same dtype and shape.
  if (!tensor.ok() || tensor->TotalBytes() > (1 << 20) || tensor->NumElements() > (1 << 16)) {
    return 0;
  }
  overseer::TensorProto round;
  tensor->ToProto(&round);
  absl::StatusOr<overseer::Tensor> again = overseer::Tensor::FromProto(round);
  if (!again.ok() || again->shape() != tensor->shape() || again->dtype() != tensor->dtype()) {
    std::fprintf(stderr, "round trip of %s: %s\n", tensor->DebugString().c_str(),
                 again.ok() ? again->DebugString().c_str() : again.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
