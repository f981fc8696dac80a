// Fuzzes RecvTensor's chunk assembly as a worker's client runs it on what a peer
// streams: the input is a sequence of messages, each a 2-byte little-endian length and
// that many bytes of RecvTensorResponse. Any stream gets a tensor or a status, never a
// crash or a write past the tensor; an assembled tensor has the bytes it announced.
// The tensor memory budget is 256 MiB here, under libFuzzer's RSS limit.

#include <cstdint>
#include <cstdlib>

#include "core/tensor.h"
#include "proto/worker.pb.h"
#include "worker/rpc/tensor_chunks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool budget = [] {
    overseer::SetTensorMemoryBudget(uint64_t{256} << 20);
    return true;
  }();
  (void)budget;
  overseer::TensorChunkReader reader;
  int64_t announced = -1;
  size_t pos = 0;
  while (pos + 2 <= size) {
    const size_t n = data[pos] | (static_cast<size_t>(data[pos + 1]) << 8);
    pos += 2;
    if (n > size - pos) break;
    overseer::RecvTensorResponse chunk;
    if (!chunk.ParseFromArray(data + pos, static_cast<int>(n))) return 0;
    pos += n;
    if (announced < 0) announced = chunk.total_bytes();
    if (!reader.Add(chunk).ok()) return 0;
  }
  absl::StatusOr<overseer::Tensor> tensor = reader.Finish();
  if (tensor.ok() && tensor->dtype() != overseer::DT_STRING &&
      static_cast<int64_t>(tensor->TotalBytes()) != announced) {
    std::abort();
  }
  return 0;
}
