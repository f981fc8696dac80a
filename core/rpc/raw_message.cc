#include "core/rpc/raw_message.h"

#include <utility>

namespace overseer {
namespace {

constexpr int kLengthDelimited = 2;  // Protobuf's wire type of bytes fields.

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void ReleaseKeepAlive(void* user_data) {
  delete static_cast<std::shared_ptr<const void>*>(user_data);
}

}  // namespace

grpc::ByteBuffer MessageWithReferencedBytes(std::string fields, uint32_t field_number,
                                            absl::string_view data,
                                            std::shared_ptr<const void> keep_alive) {
  if (!data.empty()) {
    AppendVarint((uint64_t{field_number} << 3) | kLengthDelimited, &fields);
    AppendVarint(data.size(), &fields);
  }
  if (data.size() <= kCopiedBytesMax) {
    fields.append(data.begin(), data.end());
    grpc::Slice slice(fields);
    return grpc::ByteBuffer(&slice, 1);
  }
  grpc::Slice slices[2] = {grpc::Slice(fields), grpc::Slice()};
  // The slice holds its own reference to `keep_alive`, dropped when gRPC frees it.
  slices[1] = grpc::Slice(const_cast<char*>(data.data()), data.size(), &ReleaseKeepAlive,
                          new std::shared_ptr<const void>(std::move(keep_alive)));
  return grpc::ByteBuffer(slices, 2);
}

}  // namespace overseer
