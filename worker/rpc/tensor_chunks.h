#ifndef OVERSEER_WORKER_RPC_TENSOR_CHUNKS_H_
#define OVERSEER_WORKER_RPC_TENSOR_CHUNKS_H_

// The RecvTensor stream format (proto/worker.proto, RecvTensorResponse): a first
// message with dtype, shape (and the values of a DT_STRING tensor) and total_bytes,
// then the raw element bytes in `content` chunks of at most kRecvTensorChunkBytes.
// No message comes near protobuf's 2 GB limit, whatever the tensor's size.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/worker.pb.h"

namespace overseer {

inline constexpr int64_t kRecvTensorChunkBytes = 4 << 20;

// The element bytes of a tensor of a fixed-size dtype (its buffer, not copied); empty
// with a null data() for DT_STRING.
absl::string_view RawTensorBytes(const Tensor& tensor);

// What the first message says of the worker's local transfer socket
// (worker/rpc/local_transfer.h): its address, and the token of this tensor's bytes.
struct LocalTransferFields {
  absl::string_view socket;
  // Not empty: the bytes go over the socket and no message carries content.
  absl::string_view token;
};

// UNAVAILABLE: the receiver closed the RecvTensor stream (a write to it failed).
absl::Status ReceiverClosed();

// Calls `write` with each message of `tensor`'s stream, in order, as the raw bytes of
// a RecvTensorResponse (core/rpc/raw_message.h): `content` references the tensor's
// buffer, which the messages keep alive until gRPC has sent them, so element bytes are
// never copied into a protobuf field nor serialised (but for a content of at most
// kCopiedBytesMax, which is copied); `content_bytes` is the size of the message's
// content. `last` is true for the stream's final message if it holds no memory of the
// tensor's (all of the tensor in one copied message), which the writer may then send
// with the call's status. Stops and returns UNAVAILABLE when `write` returns false (the
// peer went away). The first message carries `local`'s fields.
using TensorChunkWriter =
    std::function<bool(grpc::ByteBuffer message, int64_t content_bytes, bool last)>;
absl::Status WriteTensorChunks(const Tensor& tensor, int64_t chunk_bytes,
                               const TensorChunkWriter& write,
                               const LocalTransferFields& local = {});

// Rebuilds a tensor from its stream. Not thread-safe.
class TensorChunkReader {
 public:
  // Takes the next message. INVALID_ARGUMENT for a first message with a bad dtype or
  // shape or a size that does not match them, or a local token for a DT_STRING tensor;
  // for more bytes than announced, or any content after a local token.
  absl::Status Add(const RecvTensorResponse& chunk);
  // Add of the message whose encoding gRPC received as `message`, with the element
  // bytes copied from gRPC's buffers straight into the tensor: parsing the message
  // first would copy them into its `content` and then again. The same errors as Add,
  // and INVALID_ARGUMENT for bytes that are no RecvTensorResponse or that carry
  // `content` twice, and for a first message with other fields after its content
  // (protobuf writes fields in number order: content, field 3, comes last).
  absl::Status AddEncoded(grpc::ByteBuffer* message);
  // The tensor once every byte arrived; INVALID_ARGUMENT for a truncated stream.
  absl::StatusOr<Tensor> Finish();

  // The first message's local_socket and local_token (empty: none).
  const std::string& local_socket() const { return local_socket_; }
  const std::string& local_token() const { return local_token_; }
  // Calls `fill` with the bytes not received yet (for a local token: all of them) and,
  // if it returns OK, counts them received. Returns what `fill` returns.
  absl::Status FillRest(const std::function<absl::Status(absl::Span<char> rest)>& fill);

 private:
  bool started_ = false;
  Tensor tensor_;
  char* data_ = nullptr;
  int64_t total_ = 0;
  int64_t received_ = 0;
  std::string local_socket_;
  std::string local_token_;
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_RPC_TENSOR_CHUNKS_H_
