#include "checkpoint_store/rpc/read_tensors_wire.h"

#include <memory>
#include <string>
#include <vector>

#include "checkpoint_store/testing/tensor_headers.h"
#include "core/rpc/raw_message.h"
#include "gtest/gtest.h"
#include "proto/checkpoint_store.pb.h"

namespace overseer {
namespace {

using test::FloatHeader;

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 131 + seed);
  return s;
}

// The bytes of a buffer, flattened.
std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// `bytes` as a buffer of slices of at most `piece` bytes (as gRPC's receive buffers
// may split a message anywhere).
grpc::ByteBuffer Split(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t pos = 0; pos < bytes.size(); pos += piece) {
    const std::string part = bytes.substr(pos, piece);
    slices.emplace_back(part.data(), part.size());
  }
  if (slices.empty()) return grpc::ByteBuffer();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// Collects received tensors; can be told to fail.
class Collector : public TensorReceiver {
 public:
  absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
    if (!allocate_error.ok()) return allocate_error;
    current.assign(static_cast<size_t>(header.size()), '\xEE');
    return current.data();
  }
  absl::Status Received(const TensorHeader& header) override {
    names.push_back(header.name());
    contents.push_back(current);
    return absl::OkStatus();
  }

  absl::Status allocate_error;
  std::string current;
  std::vector<std::string> names;
  std::vector<std::string> contents;
};

// The messages of a stream as the service sends them: the header with the first
// chunk, then the rest in chunks.
std::vector<std::string> Stream(const std::vector<std::pair<TensorHeader, std::string>>& tensors,
                                size_t chunk) {
  std::vector<std::string> messages;
  for (const auto& [header, data] : tensors) {
    auto keep = std::make_shared<std::string>(data);
    size_t pos = 0;
    do {
      const absl::string_view part = absl::string_view(*keep).substr(pos, chunk);
      messages.push_back(
          Flatten(EncodeReadTensorsMessage(pos == 0 ? &header : nullptr, part, keep)));
      pos += part.size();
    } while (pos < data.size());
  }
  return messages;
}

TEST(ReadTensorsWireTest, EncodedMessagesAreProtobufReadTensorsResponses) {
  const TensorHeader header = FloatHeader("layer/w", 300);
  const std::string data = Pattern(1200, 1);
  auto keep = std::make_shared<std::string>(data);
  ReadTensorsResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(
      Flatten(EncodeReadTensorsMessage(&header, absl::string_view(*keep).substr(0, 1000), keep))));
  EXPECT_EQ(parsed.tensor().SerializeAsString(), header.SerializeAsString());
  EXPECT_EQ(parsed.data(), data.substr(0, 1000));
  ASSERT_TRUE(parsed.ParseFromString(
      Flatten(EncodeReadTensorsMessage(nullptr, absl::string_view(*keep).substr(1000), keep))));
  EXPECT_FALSE(parsed.has_tensor());
  EXPECT_EQ(parsed.data(), data.substr(1000));
  // Protobuf's own encoding of the same message is the same bytes.
  ReadTensorsResponse message;
  *message.mutable_tensor() = header;
  message.set_data(data);
  EXPECT_EQ(Flatten(EncodeReadTensorsMessage(&header, data, keep)), message.SerializeAsString());
}

TEST(ReadTensorsWireTest, DataIsReferencedUntilTheBufferGoes) {
  constexpr size_t kBytes = kCopiedBytesMax + 4;
  const TensorHeader header = FloatHeader("w", kBytes / 4);
  auto keep = std::make_shared<std::string>(Pattern(kBytes, 2));
  std::weak_ptr<std::string> watch = keep;
  {
    grpc::ByteBuffer message = EncodeReadTensorsMessage(&header, *keep, keep);
    keep.reset();
    EXPECT_FALSE(watch.expired());
    grpc::ByteBuffer copy = message;  // gRPC copies buffers by reference.
    message.Clear();
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
}

TEST(ReadTensorsWireTest, SmallDataIsCopiedAndNotKeptAlive) {
  const TensorHeader header = FloatHeader("w", 4);
  auto keep = std::make_shared<std::string>(Pattern(16, 2));
  std::weak_ptr<std::string> watch = keep;
  grpc::ByteBuffer message = EncodeReadTensorsMessage(&header, *keep, keep);
  keep.reset();
  EXPECT_TRUE(watch.expired());
  ReadTensorsResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(message)));
  EXPECT_EQ(parsed.data(), Pattern(16, 2));
}

TEST(ReadTensorsWireTest, DecodesStreamsSplitAnywhere) {
  const std::vector<std::pair<TensorHeader, std::string>> tensors = {
      {FloatHeader("a", 1000), Pattern(4000, 3)},
      {FloatHeader("empty", 0), ""},
      {FloatHeader("b", 7), Pattern(28, 4)},
      {FloatHeader("c", 513), Pattern(2052, 5)},
  };
  const std::vector<std::string> messages = Stream(tensors, 1024);
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, size_t{100}, size_t{1} << 20}) {
    Collector collector;
    ReadTensorsDecoder decoder("model.ckpt-1", &collector);
    for (const std::string& m : messages) {
      absl::Status s = decoder.Add(Split(m, piece));
      ASSERT_TRUE(s.ok()) << s << " (slices of " << piece << " bytes)";
    }
    EXPECT_TRUE(decoder.Finish().ok());
    EXPECT_EQ(decoder.tensors_received(), 4);
    ASSERT_EQ(collector.names, (std::vector<std::string>{"a", "empty", "b", "c"}));
    for (size_t t = 0; t < tensors.size(); ++t) {
      EXPECT_TRUE(collector.contents[t] == tensors[t].second) << "tensor " << t;
    }
  }
}

TEST(ReadTensorsWireTest, DecodesProtobufEncodedMessagesWithUnknownFields) {
  // A whole tensor in one message, as protobuf writes it, with a field this reader
  // does not know after it.
  ReadTensorsResponse message;
  *message.mutable_tensor() = FloatHeader("w", 3);
  message.set_data(Pattern(12, 6));
  std::string bytes = message.SerializeAsString();
  bytes += std::string("\x18\x96\x01", 3);          // Field 3, varint 150.
  bytes += std::string("\x25\x01\x02\x03\x04", 5);  // Field 4, fixed32.
  Collector collector;
  ReadTensorsDecoder decoder("ckpt", &collector);
  ASSERT_TRUE(decoder.Add(Split(bytes, 5)).ok());
  EXPECT_TRUE(decoder.Finish().ok());
  ASSERT_EQ(collector.contents.size(), 1u);
  EXPECT_EQ(collector.contents[0], message.data());
}

TEST(ReadTensorsWireTest, EveryTruncationIsDataLossNeverACrash) {
  const std::vector<std::string> messages = Stream({{FloatHeader("w", 100), Pattern(400, 7)}}, 400);
  ASSERT_EQ(messages.size(), 1u);
  const std::string& whole = messages[0];
  for (size_t cut = 1; cut < whole.size(); ++cut) {  // Cut 0 is an empty message.
    Collector collector;
    ReadTensorsDecoder decoder("model.ckpt-9", &collector);
    absl::Status s = decoder.Add(Split(whole.substr(0, cut), 64));
    if (s.ok()) s = decoder.Finish();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "cut at " << cut << ": " << s;
    EXPECT_NE(s.message().find("model.ckpt-9"), std::string::npos) << s;
    EXPECT_TRUE(collector.names.empty());
  }
}

TEST(ReadTensorsWireTest, IncompleteTensorNamesIt) {
  const std::vector<std::string> messages = Stream({{FloatHeader("w", 100), Pattern(400, 8)}}, 128);
  Collector collector;
  ReadTensorsDecoder decoder("model.ckpt-2", &collector);
  ASSERT_TRUE(decoder.Add(Split(messages[0], 1000)).ok());
  absl::Status s = decoder.Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("tensor w of model.ckpt-2 arrived incomplete (128 of 400"),
            std::string::npos)
      << s;
  // A new header before the rest of w.
  s = decoder.Add(Split(Stream({{FloatHeader("v", 1), Pattern(4, 9)}}, 64)[0], 1000));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("tensor w of model.ckpt-2 arrived incomplete"), std::string::npos)
      << s;
}

TEST(ReadTensorsWireTest, BadStreamsAreDataLoss) {
  auto decode = [](const std::vector<std::string>& messages) {
    Collector collector;
    ReadTensorsDecoder decoder("ckpt", &collector);
    for (const std::string& m : messages) {
      absl::Status s = decoder.Add(Split(m, 1000));
      if (!s.ok()) return s;
    }
    return decoder.Finish();
  };
  const TensorHeader w = FloatHeader("w", 2);
  auto message = [](const TensorHeader* h, const std::string& data) {
    ReadTensorsResponse m;
    if (h != nullptr) *m.mutable_tensor() = *h;
    m.set_data(data);
    return m.SerializeAsString();
  };
  struct Case {
    const char* what;
    std::vector<std::string> messages;
    const char* error;
  };
  TensorHeader mismatch = w;
  mismatch.set_size(9);
  TensorHeader negative = w;
  negative.mutable_shape()->mutable_dim(0)->set_size(-1);
  negative.set_size(-4);
  const std::vector<Case> cases = {
      {"data without a header", {message(nullptr, "abcd")}, "sent bytes beyond any tensor"},
      {"more bytes than the size", {message(&w, "0123456789")}, "beyond the size of tensor w"},
      {"more bytes in a later message",
       {message(&w, "0123"), message(nullptr, "45678")},
       "beyond the size of tensor w"},
      {"size not matching the shape", {message(&mismatch, "")}, "sent a bad tensor header"},
      {"negative shape", {message(&negative, "")}, "sent a bad tensor header"},
      {"unparsable header", {std::string("\x0a\x02\xff\xff", 4)}, "unparsable tensor header"},
      {"wire type 7", {std::string("\x0f", 1)}, "wire type 7"},
      {"length past the end", {std::string("\x12\x80\x01xy", 5)}, "with only 2 left"},
      {"endless varint", {std::string(12, '\x80')}, "truncated field key"},
  };
  for (const Case& c : cases) {
    absl::Status s = decode(c.messages);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << c.what << ": " << s;
    EXPECT_NE(s.message().find(c.error), std::string::npos) << c.what << ": " << s;
  }
}

TEST(ReadTensorsWireTest, ReceiverErrorsStopTheDecoder) {
  Collector collector;
  collector.allocate_error = absl::InvalidArgumentError("w is not a float here");
  ReadTensorsDecoder decoder("ckpt", &collector);
  absl::Status s = decoder.Add(Split(Stream({{FloatHeader("w", 1), Pattern(4, 1)}}, 64)[0], 100));
  EXPECT_EQ(s, collector.allocate_error);
}

TEST(ReadTensorsWireTest, EmptyMessagesAreHarmless) {
  Collector collector;
  ReadTensorsDecoder decoder("ckpt", &collector);
  EXPECT_TRUE(decoder.Add(grpc::ByteBuffer()).ok());
  EXPECT_TRUE(decoder.Finish().ok());
  EXPECT_EQ(decoder.tensors_received(), 0);
}

}  // namespace
}  // namespace overseer
