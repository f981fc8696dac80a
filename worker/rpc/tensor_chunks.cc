#include "worker/rpc/tensor_chunks.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/rpc/raw_message.h"
#include "core/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace overseer {

absl::Status ReceiverClosed() {
  return absl::UnavailableError("the receiver closed the RecvTensor stream");
}

namespace {

// The element bytes of a fixed-size dtype; nullptr for DT_STRING.
char* RawData(const Tensor& t) {
  switch (t.dtype()) {
#define OVERSEER_RAW_CASE(T)     \
  case DataTypeToEnum<T>::value: \
    return reinterpret_cast<char*>(t.data<T>());
    OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_RAW_CASE)
    OVERSEER_RAW_CASE(bool)
#undef OVERSEER_RAW_CASE
    default:
      return nullptr;
  }
}

// The error of content after a local token.
absl::Status ContentAfterLocalToken() {
  return absl::InvalidArgumentError("RecvTensor sent content after a local transfer token");
}

}  // namespace

absl::string_view RawTensorBytes(const Tensor& tensor) {
  const char* data = RawData(tensor);
  if (data == nullptr) return absl::string_view();
  return absl::string_view(data, tensor.NumElements() * DataTypeSize(tensor.dtype()));
}

absl::Status WriteTensorChunks(const Tensor& tensor, int64_t chunk_bytes,
                               const TensorChunkWriter& write, const LocalTransferFields& local) {
  constexpr uint32_t kContentField = 3;  // RecvTensorResponse.content
  chunk_bytes = std::max<int64_t>(1, chunk_bytes);
  RecvTensorResponse first;  // Fields 1, 2, 4 and 5; the content follows.
  TensorProto* meta = first.mutable_tensor();
  const char* data = RawData(tensor);
  int64_t total = 0;
  if (data == nullptr) {
    tensor.ToProto(meta);  // Strings travel in the first message.
  } else {
    meta->set_dtype(tensor.dtype());
    tensor.shape().ToProto(meta->mutable_tensor_shape());
    total = static_cast<int64_t>(tensor.NumElements() * DataTypeSize(tensor.dtype()));
  }
  first.set_total_bytes(total);
  if (!local.socket.empty()) first.set_local_socket(std::string(local.socket));
  if (!local.token.empty()) {
    // The call goes on with the transfer: not the last message.
    first.set_local_token(std::string(local.token));
    if (!write(MessageWithReferencedBytes(first.SerializeAsString(), kContentField,
                                          absl::string_view(), nullptr),
               0, /*last=*/false)) {
      return ReceiverClosed();
    }
    return absl::OkStatus();
  }
  int64_t offset = std::min(total, chunk_bytes);
  // Shares the tensor's buffer with the messages in flight (smaller ones are copied).
  std::shared_ptr<const Tensor> keep_alive;
  if (offset > static_cast<int64_t>(kCopiedBytesMax)) {
    keep_alive = std::make_shared<const Tensor>(tensor);
  }
  // All of the tensor in one message that holds none of its memory.
  const bool last = offset == total && total <= static_cast<int64_t>(kCopiedBytesMax);
  if (!write(MessageWithReferencedBytes(first.SerializeAsString(), kContentField,
                                        absl::string_view(data, offset), keep_alive),
             offset, last)) {
    return ReceiverClosed();
  }
  while (offset < total) {
    const int64_t n = std::min(total - offset, chunk_bytes);
    if (!write(MessageWithReferencedBytes(std::string(), kContentField,
                                          absl::string_view(data + offset, n), keep_alive),
               n, /*last=*/false)) {
      return ReceiverClosed();
    }
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status TensorChunkReader::Add(const RecvTensorResponse& chunk) {
  if (!started_) {
    started_ = true;
    const DataType dtype = chunk.tensor().dtype();
    if (dtype == DT_STRING) {  // The values are all in the first message.
      ASSIGN_OR_RETURN(tensor_, Tensor::FromProto(chunk.tensor()));
    } else {
      if (!IsSupportedDataType(dtype)) {
        return absl::InvalidArgumentError(
            absl::StrCat("RecvTensor sent unsupported dtype ", DataTypeString(dtype)));
      }
      ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromProto(chunk.tensor().tensor_shape()));
      // Every byte is written by the chunks (Finish checks they all came), so the
      // buffer is not zero-filled first: that pass costs as much as the copy.
      ASSIGN_OR_RETURN(tensor_, Tensor::AllocateUninitialized(dtype, shape));
      data_ = RawData(tensor_);
      total_ = static_cast<int64_t>(tensor_.NumElements() * DataTypeSize(dtype));
    }
    local_socket_ = chunk.local_socket();
    local_token_ = chunk.local_token();
    if (!local_token_.empty() && dtype == DT_STRING) {
      return absl::InvalidArgumentError("RecvTensor sent a local transfer token for strings");
    }
    if (total_ != chunk.total_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RecvTensor announced ", chunk.total_bytes(), " bytes for a ",
                       DataTypeString(tensor_.dtype()), " tensor of shape ",
                       tensor_.shape().DebugString(), ", which holds ", total_));
    }
  }
  const int64_t n = static_cast<int64_t>(chunk.content().size());
  if (n > 0 && !local_token_.empty()) return ContentAfterLocalToken();
  if (received_ + n > total_) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor sent more than the announced ", total_, " bytes"));
  }
  if (n > 0) std::memcpy(data_ + received_, chunk.content().data(), n);
  received_ += n;
  return absl::OkStatus();
}

absl::Status TensorChunkReader::AddEncoded(grpc::ByteBuffer* message) {
  using google::protobuf::internal::WireFormatLite;
  constexpr uint32_t kContentTag =
      WireFormatLite::MakeTag(3, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  // Built only on the error path: this runs for every chunk.
  auto malformed = [] {
    return absl::InvalidArgumentError("RecvTensor sent a message that is no RecvTensorResponse");
  };
  grpc::ProtoBufferReader stream(message);
  google::protobuf::io::CodedInputStream in(&stream);
  // The message's other fields, re-encoded; with no content seen yet, Add takes them.
  std::string fields;
  bool content_seen = false;
  bool starts_tensor = false;  // This is the first message: its content's fields came.

  // Hands `fields` to Add (for the first message: dtype, shape, total_bytes).
  auto add_fields = [&]() -> absl::Status {
    RecvTensorResponse chunk;
    if (!chunk.ParseFromString(fields)) return malformed();
    fields.clear();
    return Add(chunk);
  };
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (!in.ConsumedEntireMessage()) return malformed();
      break;
    }
    if (tag != kContentTag) {
      google::protobuf::io::StringOutputStream out(&fields);
      google::protobuf::io::CodedOutputStream coded(&out);
      if (!WireFormatLite::SkipField(&in, tag, &coded)) return malformed();
      continue;
    }
    if (content_seen) {
      return absl::InvalidArgumentError("RecvTensor sent a message with its content twice");
    }
    content_seen = true;
    // The first message's fields start the tensor; a later one's are ignored, as by Add.
    if (!started_) {
      starts_tensor = true;
      RETURN_IF_ERROR(add_fields());
    }
    uint32_t n = 0;
    if (!in.ReadVarint32(&n) || n > static_cast<uint32_t>(INT_MAX)) return malformed();
    if (n > 0 && !local_token_.empty()) return ContentAfterLocalToken();
    if (received_ + static_cast<int64_t>(n) > total_) {
      return absl::InvalidArgumentError(
          absl::StrCat("RecvTensor sent more than the announced ", total_, " bytes"));
    }
    if (n > 0 && !in.ReadRaw(data_ + received_, static_cast<int>(n))) return malformed();
    received_ += n;
  }
  // Fields after the first message's content would change the tensor it started (a
  // parser merges them); they are refused rather than ignored.
  if (starts_tensor && !fields.empty()) {
    return absl::InvalidArgumentError(
        "RecvTensor sent a first message with fields after its content");
  }
  return content_seen || started_ ? absl::OkStatus() : add_fields();
}

absl::Status TensorChunkReader::FillRest(
    const std::function<absl::Status(absl::Span<char> rest)>& fill) {
  if (!started_) return absl::FailedPreconditionError("no RecvTensor message arrived yet");
  const absl::Status status = fill(absl::Span<char>(data_ + received_, total_ - received_));
  if (status.ok()) received_ = total_;
  return status;
}

absl::StatusOr<Tensor> TensorChunkReader::Finish() {
  if (!started_ || received_ != total_) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor stream ended after ", received_, " of ", total_, " bytes"));
  }
  return tensor_;
}

}  // namespace overseer
