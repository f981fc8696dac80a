#ifndef OVERSEER_CORE_RPC_RAW_MESSAGE_H_
#define OVERSEER_CORE_RPC_RAW_MESSAGE_H_

// Protobuf messages sent as raw gRPC bytes so that a large `bytes` field is never
// copied: serialising a message copies its bytes field once into the message and once
// more into gRPC's buffer, where here gRPC sends a slice that references the caller's
// memory. The bytes on the wire are protobuf's encoding of the message, so any client
// (the generated stubs, python3-grpcio) reads them as the message.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "grpcpp/support/byte_buffer.h"

namespace overseer {

// `data` of at most this many bytes is copied into the message's own buffer instead of
// referenced: so small a copy costs less than the second slice and its shared owner,
// and the message then holds no memory of the caller's, so that it may be handed to
// gRPC with the call's status (grpc::WriteOptions::set_last_message) and freed on
// whichever thread gRPC sends it from.
inline constexpr size_t kCopiedBytesMax = 16 << 10;

// A message made of `fields` (the message's other fields, already encoded, e.g. by
// SerializeAsString of a message without the bytes field) followed by the bytes field
// `field_number` holding `data` (omitted if `data` is empty). `data` longer than
// kCopiedBytesMax is referenced, not copied: the returned buffer (and the copies gRPC
// makes of it) share ownership of `keep_alive`, which must own the memory of `data`,
// until gRPC has sent the bytes.
grpc::ByteBuffer MessageWithReferencedBytes(std::string fields, uint32_t field_number,
                                            absl::string_view data,
                                            std::shared_ptr<const void> keep_alive);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_RAW_MESSAGE_H_
