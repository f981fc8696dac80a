#ifndef OVERSEER_CHECKPOINT_STORE_RPC_READ_TENSORS_WIRE_H_
#define OVERSEER_CHECKPOINT_STORE_RPC_READ_TENSORS_WIRE_H_

// ReadTensors' stream of ReadTensorsResponse messages (proto/checkpoint_store.proto)
// encoded and decoded by hand, so that tensor bytes never go through a protobuf
// `bytes` field: the service sends slices that reference its read buffers, and the
// client copies each message's bytes from gRPC's receive slices straight into the
// memory a TensorReceiver provides. The bytes on the wire are protobuf's encoding of
// the message (field 1 `tensor`, then field 2 `data`), so any protobuf client (e.g.
// python3-grpcio with the generated stub) reads the stream as ReadTensorsResponse.
//
// Stream: a message with a tensor's header (and possibly its first bytes), then
// messages of more bytes until header.size bytes came; then the next tensor.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "checkpoint_store/checkpoint_store_interface.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/checkpoint_store.pb.h"

namespace overseer {

// One message: `header` (if not null) as field 1 and `data` (if not empty) as field 2.
// `data` is referenced, not copied: the returned buffer (and the copies gRPC makes of
// it) share ownership of `keep_alive`, which must own the memory of `data`, until
// gRPC has sent the bytes.
grpc::ByteBuffer EncodeReadTensorsMessage(const TensorHeader* header, absl::string_view data,
                                          std::shared_ptr<const void> keep_alive);

// Decodes a ReadTensors stream into a TensorReceiver. Not thread-safe.
class ReadTensorsDecoder {
 public:
  // `checkpoint` names the stream in errors; `receiver` is borrowed.
  ReadTensorsDecoder(std::string checkpoint, TensorReceiver* receiver)
      : checkpoint_(std::move(checkpoint)), receiver_(receiver) {}

  // Decodes the next message: a header starts a tensor (receiver->Allocate), bytes are
  // copied to its memory, and a tensor whose bytes are all in is Received. DATA_LOSS
  // naming the checkpoint for a malformed message (truncated field, bad wire type or
  // header), bytes beyond the current tensor's size or outside any tensor, or a header
  // while a tensor is incomplete. Errors of the receiver are returned as they are.
  absl::Status Add(const grpc::ByteBuffer& message);
  // DATA_LOSS naming the tensor if the stream ended in the middle of one.
  absl::Status Finish() const;

  // Tensors received so far.
  int tensors_received() const { return tensors_received_; }

 private:
  absl::Status StartTensor(const std::string& header_bytes);
  absl::Status MaybeComplete();

  const std::string checkpoint_;
  TensorReceiver* const receiver_;
  bool in_tensor_ = false;
  TensorHeader header_;
  char* dst_ = nullptr;
  int64_t received_ = 0;
  int tensors_received_ = 0;
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_RPC_READ_TENSORS_WIRE_H_
