// Fuzzes RecvTensor's chunk assembly as a worker's client runs it on what a peer
// streams: the input is a sequence of messages, each a 2-byte little-endian length and
// that many bytes of RecvTensorResponse. Any stream gets a tensor or a status, never a
// crash or a write past the tensor; an assembled tensor has the bytes it announced. A
// stream whose first message carries a local transfer token gets the rest of its bytes
// from FillRest, as from the worker's socket.
// The tensor memory budget is 256 MiB here, under libFuzzer's RSS limit.

#include <cstdint>
#include <cstdlib>

#include "core/tensor.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/worker.pb.h"
#include "worker/rpc/tensor_chunks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool budget = [] {
    overseer::SetTensorMemoryBudget(uint64_t{256} << 20);
    return true;
  }();
  (void)budget;
  overseer::TensorChunkReader reader;
  // The same messages read from their encoding, as GrpcWorker does, in two slices.
  overseer::TensorChunkReader encoded;
  bool parsed_ok = true;
  bool encoded_ok = true;
  int64_t announced = -1;
  size_t pos = 0;
  while (pos + 2 <= size && (parsed_ok || encoded_ok)) {
    const size_t n = data[pos] | (static_cast<size_t>(data[pos + 1]) << 8);
    pos += 2;
    if (n > size - pos) break;
    const char* bytes = reinterpret_cast<const char*>(data + pos);
    if (encoded_ok) {
      grpc::Slice slices[2] = {grpc::Slice(bytes, n / 2), grpc::Slice(bytes + n / 2, n - n / 2)};
      grpc::ByteBuffer message(slices, 2);
      encoded_ok = encoded.AddEncoded(&message).ok();
    }
    overseer::RecvTensorResponse chunk;
    if (parsed_ok && !chunk.ParseFromArray(bytes, static_cast<int>(n))) parsed_ok = false;
    pos += n;
    if (parsed_ok && announced < 0) announced = chunk.total_bytes();
    if (parsed_ok) parsed_ok = reader.Add(chunk).ok();
  }
  // A local token: the rest of the bytes come from the socket, here a pattern.
  auto fill = [](absl::Span<char> rest) {
    for (size_t i = 0; i < rest.size(); ++i) rest[i] = static_cast<char>(i * 7);
    return absl::OkStatus();
  };
  if (parsed_ok && encoded_ok && reader.local_token() != encoded.local_token()) std::abort();
  if (parsed_ok && !reader.local_token().empty() && !reader.FillRest(fill).ok()) std::abort();
  if (encoded_ok && !encoded.local_token().empty() && !encoded.FillRest(fill).ok()) std::abort();
  if (!parsed_ok) return 0;
  absl::StatusOr<overseer::Tensor> tensor = reader.Finish();
  if (tensor.ok() && tensor->dtype() != overseer::DT_STRING &&
      static_cast<int64_t>(tensor->TotalBytes()) != announced) {
    std::abort();
  }
  // Where both readers assembled a tensor of fixed-size elements, it is the same one.
  absl::StatusOr<overseer::Tensor> direct = encoded.Finish();
  if (encoded_ok && tensor.ok() && direct.ok() && tensor->dtype() != overseer::DT_STRING) {
    overseer::TensorProto a, b;
    tensor->ToProto(&a);
    direct->ToProto(&b);
    if (a.SerializeAsString() != b.SerializeAsString()) std::abort();
  }
  return 0;
}
