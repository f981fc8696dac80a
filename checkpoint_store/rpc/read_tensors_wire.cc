#include "checkpoint_store/rpc/read_tensors_wire.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/bundle.h"
#include "core/rpc/raw_message.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// Protobuf wire format: a field's key is (number << 3) | wire type.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;
constexpr uint32_t kTensorField = 1;
constexpr uint32_t kDataField = 2;

// Reads through the slices of one message as one sequence of bytes.
class SliceCursor {
 public:
  explicit SliceCursor(const std::vector<grpc::Slice>& slices) {
    for (const grpc::Slice& s : slices) {
      if (s.size() == 0) continue;
      parts_.emplace_back(reinterpret_cast<const char*>(s.begin()), s.size());
      remaining_ += s.size();
    }
  }

  size_t remaining() const { return remaining_; }

  // False if the bytes end inside the varint or it is longer than 10 bytes.
  bool ReadVarint(uint64_t* value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (remaining_ == 0) return false;
      const uint8_t byte = static_cast<uint8_t>(parts_[part_][offset_]);
      Advance(1);
      result |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  // Copies the next `n` bytes (n <= remaining()) to `dst` (null: skips them).
  void CopyTo(char* dst, size_t n) {
    while (n > 0) {
      const absl::string_view part = parts_[part_];
      const size_t take = std::min(n, part.size() - offset_);
      if (dst != nullptr) {
        std::memcpy(dst, part.data() + offset_, take);
        dst += take;
      }
      Advance(take);
      n -= take;
    }
  }

 private:
  void Advance(size_t n) {
    offset_ += n;
    remaining_ -= n;
    if (offset_ == parts_[part_].size() && part_ + 1 < parts_.size()) {
      ++part_;
      offset_ = 0;
    }
  }

  std::vector<absl::string_view> parts_;
  size_t part_ = 0;
  size_t offset_ = 0;
  size_t remaining_ = 0;
};

}  // namespace

grpc::ByteBuffer EncodeReadTensorsMessage(const TensorHeader* header, absl::string_view data,
                                          std::shared_ptr<const void> keep_alive) {
  ReadTensorsResponse fields;  // Field 1 `tensor`; field 2 `data` is added by reference.
  if (header != nullptr) *fields.mutable_tensor() = *header;
  return MessageWithReferencedBytes(fields.SerializeAsString(), kDataField, data,
                                    std::move(keep_alive));
}

absl::Status ReadTensorsDecoder::Add(const grpc::ByteBuffer& message) {
  std::vector<grpc::Slice> slices;
  if (message.Valid()) {
    const grpc::Status dumped = message.Dump(&slices);
    if (!dumped.ok()) {
      return absl::DataLossError(absl::StrCat(
          "ReadTensors of ", checkpoint_, " sent an unreadable message: ", dumped.error_message()));
    }
  }
  auto malformed = [&](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat("ReadTensors of ", checkpoint_, " sent a malformed message: ", what));
  };
  SliceCursor in(slices);
  while (in.remaining() > 0) {
    uint64_t key = 0;
    if (!in.ReadVarint(&key)) return malformed("truncated field key");
    const uint64_t field = key >> 3;
    const int wire_type = static_cast<int>(key & 7);
    uint64_t length = 0;
    switch (wire_type) {
      case kVarint:
        if (!in.ReadVarint(&length)) return malformed("truncated varint");
        continue;
      case kFixed64:
      case kFixed32:
        length = wire_type == kFixed64 ? 8 : 4;
        break;
      case kLengthDelimited:
        if (!in.ReadVarint(&length)) return malformed("truncated length");
        break;
      default:
        return malformed(absl::StrCat("wire type ", wire_type, " of field ", field));
    }
    if (length > in.remaining()) {
      return malformed(absl::StrCat("field ", field, " of ", length, " bytes with only ",
                                    in.remaining(), " left"));
    }
    if (wire_type == kLengthDelimited && field == kTensorField) {
      std::string header(length, '\0');
      in.CopyTo(header.data(), length);
      RETURN_IF_ERROR(StartTensor(header));
    } else if (wire_type == kLengthDelimited && field == kDataField) {
      if (!in_tensor_ || received_ + static_cast<int64_t>(length) > header_.size()) {
        return absl::DataLossError(absl::StrCat(
            "ReadTensors of ", checkpoint_, " sent bytes beyond ",
            in_tensor_ ? absl::StrCat("the size of tensor ", header_.name()) : "any tensor"));
      }
      in.CopyTo(dst_ + received_, length);
      received_ += static_cast<int64_t>(length);
      RETURN_IF_ERROR(MaybeComplete());
    } else {
      in.CopyTo(nullptr, length);  // A field this reader does not know.
    }
  }
  return absl::OkStatus();
}

absl::Status ReadTensorsDecoder::StartTensor(const std::string& header_bytes) {
  if (in_tensor_) {
    return absl::DataLossError(
        absl::StrCat("tensor ", header_.name(), " of ", checkpoint_, " arrived incomplete"));
  }
  header_.Clear();
  if (!header_.ParseFromString(header_bytes)) {
    return absl::DataLossError(
        absl::StrCat("ReadTensors of ", checkpoint_, " sent an unparsable tensor header"));
  }
  const absl::Status valid = ValidateTensorHeader(header_);
  if (!valid.ok()) {
    return absl::DataLossError(absl::StrCat("ReadTensors of ", checkpoint_,
                                            " sent a bad tensor header: ", valid.message()));
  }
  ASSIGN_OR_RETURN(dst_, receiver_->Allocate(header_));
  in_tensor_ = true;
  received_ = 0;
  return MaybeComplete();
}

absl::Status ReadTensorsDecoder::MaybeComplete() {
  if (!in_tensor_ || received_ != header_.size()) return absl::OkStatus();
  in_tensor_ = false;
  dst_ = nullptr;
  ++tensors_received_;
  return receiver_->Received(header_);
}

absl::Status ReadTensorsDecoder::Finish() const {
  if (in_tensor_) {
    return absl::DataLossError(absl::StrCat("tensor ", header_.name(), " of ", checkpoint_,
                                            " arrived incomplete (", received_, " of ",
                                            header_.size(), " bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace overseer
