#include "worker/rpc/tensor_chunks.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/kernels/testing/kernel_test_util.h"
#include "core/rpc/raw_message.h"
#include "grpcpp/support/byte_buffer.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// Streams `t` and reads it back twice: parsing each message (Add) and from its
// encoding (AddEncoded, as GrpcWorker reads); the two must agree. `last` (optional) is
// whether the final message was marked last (no earlier one may be).
absl::StatusOr<Tensor> RoundTrip(const Tensor& t, int64_t chunk_bytes, int* messages,
                                 bool* last = nullptr) {
  TensorChunkReader reader;
  TensorChunkReader encoded;
  absl::Status status;
  absl::Status encoded_status;
  *messages = 0;
  bool marked = false;
  absl::Status written = WriteTensorChunks(
      t, chunk_bytes, [&](grpc::ByteBuffer raw, int64_t content_bytes, bool is_last) {
        EXPECT_FALSE(marked) << "a message after the one marked last";
        marked = is_last;
        ++*messages;
        // The raw bytes are a RecvTensorResponse, as a protobuf client parses it.
        std::vector<grpc::Slice> slices;
        EXPECT_TRUE(raw.Dump(&slices).ok());
        // A message marked last is one slice of its own: nothing of the tensor's.
        if (is_last) {
          EXPECT_EQ(slices.size(), 1u);
        }
        std::string bytes;
        for (const grpc::Slice& slice : slices) {
          bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
        }
        RecvTensorResponse m;
        EXPECT_TRUE(m.ParseFromString(bytes));
        EXPECT_EQ(static_cast<int64_t>(m.content().size()), content_bytes);
        EXPECT_LE(static_cast<int64_t>(m.content().size()), chunk_bytes);
        if (status.ok()) status = reader.Add(m);
        if (encoded_status.ok()) encoded_status = encoded.AddEncoded(&raw);
        return true;
      });
  if (!written.ok()) return written;
  if (last != nullptr) *last = marked;
  EXPECT_EQ(status, encoded_status);
  if (!status.ok()) return status;
  absl::StatusOr<Tensor> parsed = reader.Finish();
  absl::StatusOr<Tensor> direct = encoded.Finish();
  EXPECT_EQ(parsed.status(), direct.status());
  if (parsed.ok() && direct.ok()) test::ExpectTensorEqual(*direct, *parsed);
  return parsed;
}

grpc::ByteBuffer Encoded(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(TensorChunksTest, EncodedMessagesAreCheckedAsParsedOnesAre) {
  RecvTensorResponse first;
  first.mutable_tensor()->set_dtype(DT_FLOAT);
  first.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(2);
  first.set_total_bytes(8);
  first.set_content(std::string(4, '\1'));
  // A later message's content goes after the first's.
  RecvTensorResponse second;
  second.set_content(std::string(4, '\2'));
  TensorChunkReader reader;
  grpc::ByteBuffer a = Encoded(first.SerializeAsString());
  grpc::ByteBuffer b = Encoded(second.SerializeAsString());
  ASSERT_TRUE(reader.AddEncoded(&a).ok());
  ASSERT_TRUE(reader.AddEncoded(&b).ok());
  absl::StatusOr<Tensor> t = reader.Finish();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(t->data<float>()), 8),
            std::string(4, '\1') + std::string(4, '\2'));
  // More than announced.
  grpc::ByteBuffer c = Encoded(second.SerializeAsString());
  EXPECT_EQ(reader.AddEncoded(&c).code(), absl::StatusCode::kInvalidArgument);
  // Not a message at all: a truncated length.
  TensorChunkReader garbage;
  grpc::ByteBuffer d = Encoded(std::string("\x1a\xff\xff", 3));
  EXPECT_EQ(garbage.AddEncoded(&d).code(), absl::StatusCode::kInvalidArgument);
  // Content twice in one message.
  TensorChunkReader twice;
  grpc::ByteBuffer e = Encoded(first.SerializeAsString() + second.SerializeAsString());
  const absl::Status s = twice.AddEncoded(&e);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "twice")) << s;
  // A first message with its tensor's fields after its content: a parser would merge
  // them into the tensor it started, so they are refused.
  RecvTensorResponse late;
  late.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(3);
  TensorChunkReader after;
  grpc::ByteBuffer g = Encoded(first.SerializeAsString() + late.SerializeAsString());
  const absl::Status refused = after.AddEncoded(&g);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "after its content")) << refused;
  // A bad first message, as with Add.
  first.set_total_bytes(12);
  TensorChunkReader bad;
  grpc::ByteBuffer f = Encoded(first.SerializeAsString());
  EXPECT_EQ(bad.AddEncoded(&f).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorChunksTest, ALocalTokenReplacesTheContentWhichFillRestProvides) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 3.5f;
  const Tensor t = test::AsTensor<float>(values);
  std::vector<std::string> messages;
  ASSERT_TRUE(WriteTensorChunks(t, 256,
                                [&](grpc::ByteBuffer raw, int64_t content_bytes, bool last) {
                                  EXPECT_EQ(content_bytes, 0);
                                  EXPECT_FALSE(last);  // The call goes on.
                                  std::vector<grpc::Slice> slices;
                                  EXPECT_TRUE(raw.Dump(&slices).ok());
                                  std::string bytes;
                                  for (const grpc::Slice& slice : slices) {
                                    bytes.append(reinterpret_cast<const char*>(slice.begin()),
                                                 slice.size());
                                  }
                                  messages.push_back(bytes);
                                  return true;
                                },
                                {"@socket", "token"})
                  .ok());
  ASSERT_EQ(messages.size(), 1u);  // No content follows: the bytes go over the socket.
  RecvTensorResponse first;
  ASSERT_TRUE(first.ParseFromString(messages[0]));
  EXPECT_EQ(first.local_socket(), "@socket");
  EXPECT_EQ(first.local_token(), "token");
  EXPECT_EQ(first.total_bytes(), 4000);
  EXPECT_TRUE(first.content().empty());
  const absl::string_view raw = RawTensorBytes(t);
  for (bool encoded : {false, true}) {
    TensorChunkReader reader;
    grpc::ByteBuffer message = Encoded(messages[0]);
    ASSERT_TRUE((encoded ? reader.AddEncoded(&message) : reader.Add(first)).ok());
    EXPECT_EQ(reader.local_socket(), "@socket");
    EXPECT_EQ(reader.local_token(), "token");
    EXPECT_EQ(reader.Finish().status().code(), absl::StatusCode::kInvalidArgument);  // Not yet.
    // A fill that fails counts nothing.
    EXPECT_EQ(
        reader.FillRest([](absl::Span<char>) { return absl::UnavailableError("gone"); }).code(),
        absl::StatusCode::kUnavailable);
    ASSERT_TRUE(reader
                    .FillRest([&](absl::Span<char> rest) {
                      EXPECT_EQ(rest.size(), raw.size());
                      std::memcpy(rest.data(), raw.data(), raw.size());
                      return absl::OkStatus();
                    })
                    .ok());
    absl::StatusOr<Tensor> back = reader.Finish();
    ASSERT_TRUE(back.ok()) << back.status();
    test::ExpectTensorEqual(*back, t);
  }
  // Content after a token is refused, whichever way it is read.
  RecvTensorResponse more;
  more.set_content(std::string(4, '\1'));
  TensorChunkReader parsed;
  ASSERT_TRUE(parsed.Add(first).ok());
  EXPECT_EQ(parsed.Add(more).code(), absl::StatusCode::kInvalidArgument);
  TensorChunkReader encoded;
  grpc::ByteBuffer a = Encoded(messages[0]);
  grpc::ByteBuffer b = Encoded(more.SerializeAsString());
  ASSERT_TRUE(encoded.AddEncoded(&a).ok());
  const absl::Status refused = encoded.AddEncoded(&b);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.message(), "after a local transfer token")) << refused;
  // Strings never travel over the socket.
  RecvTensorResponse strings;
  Tensor::FromVector<std::string>({"a"}).ToProto(strings.mutable_tensor());
  strings.set_local_token("token");
  TensorChunkReader string_reader;
  EXPECT_EQ(string_reader.Add(strings).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(RawTensorBytes(Tensor::FromVector<std::string>({"a"})).empty());
}

TEST(TensorChunksTest, RoundTripsAcrossManyChunks) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  Tensor t = test::AsTensor<float>(values, TensorShape({10, 100}));
  int messages = 0;
  absl::StatusOr<Tensor> back = RoundTrip(t, 256, &messages);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(messages, (4000 + 255) / 256);
  test::ExpectTensorEqual(*back, t);
}

TEST(TensorChunksTest, AWholeSmallTensorIsCopiedIntoOneMessageMarkedLast) {
  int messages = 0;
  bool last = false;
  // Up to kCopiedBytesMax in one message: copied, and marked last.
  std::vector<float> small(kCopiedBytesMax / sizeof(float), 1.5f);
  absl::StatusOr<Tensor> back = RoundTrip(test::AsTensor<float>(small), 1 << 20, &messages, &last);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(messages, 1);
  EXPECT_TRUE(last);
  back = RoundTrip(test::AsScalar<int64_t>(-5), 4 << 20, &messages, &last);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(last);
  back = RoundTrip(test::AsTensor<std::string>({"a", "b"}), 4, &messages, &last);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(last);
  // One float more: referenced, so not held back with the status.
  small.push_back(2.5f);
  back = RoundTrip(test::AsTensor<float>(small), 1 << 20, &messages, &last);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(messages, 1);
  EXPECT_FALSE(last);
  test::ExpectTensorEqual(*back, test::AsTensor<float>(small));
  // In several messages: none is marked (even if each is small).
  back = RoundTrip(test::AsTensor<float>({1, 2, 3, 4}), 8, &messages, &last);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(messages, 2);
  EXPECT_FALSE(last);
}

TEST(TensorChunksTest, RoundTripsStringsScalarsAndEmptyTensors) {
  int messages = 0;
  Tensor strings = test::AsTensor<std::string>({"a", "", "long string"});
  absl::StatusOr<Tensor> back = RoundTrip(strings, 4, &messages);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(messages, 1);
  test::ExpectTensorEqual(*back, strings);
  back = RoundTrip(test::AsScalar<int64_t>(-5), 4, &messages);
  ASSERT_TRUE(back.ok()) << back.status();
  test::ExpectTensorEqual(*back, test::AsScalar<int64_t>(-5));
  Tensor empty(DT_INT32, TensorShape({0, 3}));
  back = RoundTrip(empty, 4, &messages);
  ASSERT_TRUE(back.ok()) << back.status();
  test::ExpectTensorEqual(*back, empty);
  back = RoundTrip(test::AsTensor<bool>({true, false, true}), 2, &messages);
  ASSERT_TRUE(back.ok()) << back.status();
  test::ExpectTensorEqual(*back, test::AsTensor<bool>({true, false, true}));
}

TEST(TensorChunksTest, RejectsInconsistentStreams) {
  RecvTensorResponse first;
  first.mutable_tensor()->set_dtype(DT_FLOAT);
  first.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(2);
  first.set_total_bytes(12);  // Two floats are 8 bytes.
  TensorChunkReader reader;
  EXPECT_EQ(reader.Add(first).code(), absl::StatusCode::kInvalidArgument);

  TensorChunkReader truncated;
  first.set_total_bytes(8);
  first.set_content(std::string(4, '\0'));
  ASSERT_TRUE(truncated.Add(first).ok());
  EXPECT_EQ(truncated.Finish().status().code(), absl::StatusCode::kInvalidArgument);
  RecvTensorResponse too_much;
  too_much.set_content(std::string(8, '\0'));
  EXPECT_EQ(truncated.Add(too_much).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorChunksTest, AClosedReceiverIsUnavailable) {
  Tensor t = test::AsTensor<float>({1, 2, 3, 4});
  absl::Status s = WriteTensorChunks(t, 4, [](grpc::ByteBuffer, int64_t, bool) { return false; });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace overseer
