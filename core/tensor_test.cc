#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"
#include "proto/tensor.pb.h"

namespace overseer {
namespace {

TEST(TensorShapeTest, ElementsAndDebugString) {
  TensorShape s({2, 3});
  EXPECT_EQ(s.num_elements(), 6);
  EXPECT_EQ(s.DebugString(), "[2,3]");
  EXPECT_EQ(TensorShape().num_elements(), 1);
  EXPECT_EQ(TensorShape({4, 0}).num_elements(), 0);
  EXPECT_FALSE(TensorShape::FromDims({2, -1}).ok());
}

TEST(TensorShapeTest, Broadcast) {
  EXPECT_EQ(*BroadcastShapes(TensorShape({2, 1}), TensorShape({1, 3})), TensorShape({2, 3}));
  EXPECT_EQ(*BroadcastShapes(TensorShape({}), TensorShape({4})), TensorShape({4}));
  auto bad = BroadcastShapes(TensorShape({2, 3}), TensorShape({4}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[2,3] vs. [4]"), std::string::npos);
}

TEST(PartialShapeTest, MergeAndCompatibility) {
  PartialShape a({-1, 784});
  EXPECT_TRUE(a.IsCompatibleWith(TensorShape({32, 784})));
  EXPECT_FALSE(a.IsCompatibleWith(TensorShape({32, 10})));
  EXPECT_FALSE(a.IsCompatibleWith(TensorShape({784})));
  EXPECT_TRUE(PartialShape::Unknown().IsCompatibleWith(TensorShape({1, 2, 3})));
  EXPECT_EQ(*a.Merge(PartialShape({8, -1})), PartialShape({8, 784}));
  EXPECT_EQ(a.DebugString(), "[?,784]");
  TensorShapeProto p;
  PartialShape::Unknown().ToProto(&p);
  EXPECT_TRUE(p.unknown_rank());
  EXPECT_FALSE(PartialShape::FromProto(p).known_rank());
}

TEST(TensorTest, EigenViews) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  EXPECT_EQ(t.matrix<float>()(1, 2), 6);
  EXPECT_EQ(t.flat<float>()(3), 4);
  auto t3 = t.tensor<float, 3>();
  EXPECT_EQ(t3(0, 1, 0), 4);
  EXPECT_EQ(Tensor::Scalar<int64_t>(7).scalar<int64_t>(), 7);
  EXPECT_EQ(t.flat_inner_dims<float>(1).dimension(1), 3);
}

// Var::PrepareForUpdate's check: a writer that sees the count at one may write in
// place, after whatever the last other holder did with the buffer. Under
// ThreadSanitizer (in //:tsan_tests) a check that orders nothing is a reported race.
TEST(TensorTest, ACountOfOneOrdersTheOtherHoldersReadsBeforeTheWrite) {
  Tensor owner = Tensor::FromVector<int32_t>({1, 2});
  std::atomic<int32_t> seen{0};
  std::thread reader([held = owner, &seen]() mutable {
    seen = held.data<int32_t>()[1];
    held = Tensor();  // Lets go of the buffer.
  });
  while (!owner.RefCountIsOne()) std::this_thread::yield();
  owner.data<int32_t>()[1] = 3;
  reader.join();
  EXPECT_EQ(seen.load(), 2);
  EXPECT_TRUE(owner.RefCountIsOne());
}

TEST(TensorTest, CopiesShareAndDeepCopyDoesNot) {
  Tensor a = Tensor::FromVector<int32_t>({1, 2});
  Tensor b = a;
  EXPECT_TRUE(b.SharesBufferWith(a));
  EXPECT_FALSE(a.RefCountIsOne());
  Tensor c = a.DeepCopy();
  c.data<int32_t>()[0] = 9;
  EXPECT_EQ(a.data<int32_t>()[0], 1);
  auto r = a.Reshaped(TensorShape({1, 2}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shape(), TensorShape({1, 2}));
  EXPECT_FALSE(a.Reshaped(TensorShape({3})).ok());
}

TEST(TensorTest, ProtoRoundTripEveryType) {
  std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2}, TensorShape({2, 1})),
      Tensor::FromVector<double>({3.25}),
      Tensor::FromVector<int32_t>({1, 2, 3}),
      Tensor::FromVector<int64_t>({int64_t{1} << 40}),
      Tensor::FromVector<bool>({true, false}),
      Tensor::FromVector<std::string>({"a", "", "ccc"}),
      Tensor(DT_FLOAT, TensorShape({0, 3})),
  };
  for (const Tensor& t : tensors) {
    for (bool typed : {false, true}) {
      TensorProto p;
      t.ToProto(&p, typed);
      auto back = Tensor::FromProto(p);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_TRUE(back->Equals(t)) << t.DebugString() << " vs " << back->DebugString();
    }
  }
}

TEST(TensorTest, FromProtoSingleValueFillsShape) {
  TensorProto p;
  p.set_dtype(DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(3);
  p.add_float_val(0.5f);
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->flat<float>()(2), 0.5f);
}

TEST(TensorTest, FromProtoRejectsBadInput) {
  TensorProto p;
  p.set_dtype(DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(2);
  p.set_tensor_content(std::string(7, '\0'));
  EXPECT_EQ(Tensor::FromProto(p).status().code(), absl::StatusCode::kInvalidArgument);
  p.clear_tensor_content();
  p.add_float_val(1);
  p.add_float_val(2);
  p.add_float_val(3);
  EXPECT_EQ(Tensor::FromProto(p).status().code(), absl::StatusCode::kInvalidArgument);
  TensorProto q;
  q.set_dtype(DT_HALF);
  EXPECT_EQ(Tensor::FromProto(q).status().code(), absl::StatusCode::kInvalidArgument);
  TensorProto r;
  r.set_dtype(DT_INT32);
  r.mutable_tensor_shape()->add_dim()->set_size(-3);
  EXPECT_EQ(Tensor::FromProto(r).status().code(), absl::StatusCode::kInvalidArgument);
}

// Shapes whose byte size does not fit are refused, not wrapped: a float [2^62] needs
// 2^64 bytes, which wrapped to a 0-byte buffer.
TEST(TensorTest, AllocateRefusesShapesWhoseByteSizeOverflows) {
  const std::vector<TensorShape> too_large = {
      TensorShape({int64_t{1} << 62}), TensorShape({int64_t{1} << 61}),  // 2^63 bytes of floats.
      TensorShape({int64_t{1} << 40, int64_t{1} << 40}),
      TensorShape({int64_t{1} << 31, int64_t{1} << 31, 0}),  // Empty after all: fine.
  };
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Tensor> t = Tensor::Allocate(DT_FLOAT, too_large[i]);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << too_large[i].DebugString();
    EXPECT_NE(t.status().message().find("2^62 bytes"), std::string::npos) << t.status();
    EXPECT_NE(t.status().message().find(too_large[i].DebugString()), std::string::npos);
  }
  absl::StatusOr<Tensor> empty = Tensor::Allocate(DT_FLOAT, too_large[3]);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->NumElements(), 0);
  EXPECT_EQ(Tensor::Allocate(DT_FLOAT, TensorShape({2, -1})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::Allocate(DT_HALF, TensorShape({2})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Tensor::AllocateUninitialized(DT_STRING, TensorShape({int64_t{1} << 60})).status().code(),
      absl::StatusCode::kInvalidArgument);

  TensorProto proto;  // The same through FromProto, with no values.
  proto.set_dtype(DT_FLOAT);
  proto.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 62);
  EXPECT_EQ(Tensor::FromProto(proto).status().code(), absl::StatusCode::kInvalidArgument);
}

// The process's budget for live tensor bytes: beyond it a checked allocation is
// RESOURCE_EXHAUSTED (the unchecked constructor is the program's own business).
class TensorBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override { SetTensorMemoryBudget(LiveTensorBytes() + (8 << 20)); }
  void TearDown() override { SetTensorMemoryBudget(DefaultTensorMemoryBudget()); }
};

TEST_F(TensorBudgetTest, AllocationsBeyondTheBudgetAreResourceExhausted) {
  const uint64_t before = LiveTensorBytes();
  absl::StatusOr<Tensor> six = Tensor::Allocate(DT_FLOAT, TensorShape({3 << 19}));  // 6 MiB.
  ASSERT_TRUE(six.ok()) << six.status();
  EXPECT_GE(LiveTensorBytes(), before + (6 << 20));
  absl::StatusOr<Tensor> four = Tensor::AllocateUninitialized(DT_FLOAT, TensorShape({1 << 20}));
  EXPECT_EQ(four.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(four.status().message().find("memory budget"), std::string::npos) << four.status();
  EXPECT_NE(four.status().message().find("[1048576]"), std::string::npos) << four.status();
  EXPECT_EQ(LiveTensorBytes(), before + (6 << 20));  // The refused bytes are not counted.

  *six = Tensor();  // Freed: the budget has room again.
  EXPECT_EQ(LiveTensorBytes(), before);
  EXPECT_TRUE(Tensor::Allocate(DT_FLOAT, TensorShape({1 << 20})).ok());
  // Small tensors count too, rounded to their allocation.
  absl::StatusOr<Tensor> small = Tensor::Allocate(DT_INT32, TensorShape({3}));
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(LiveTensorBytes(), before + 64);

  SetTensorMemoryBudget(0);  // No budget: only the overflow check.
  EXPECT_TRUE(Tensor::Allocate(DT_FLOAT, TensorShape({3 << 20})).ok());
}

TEST(TensorTest, DefaultBudgetIsAtMostPhysicalMemory) {
  const uint64_t physical = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
  EXPECT_GT(DefaultTensorMemoryBudget(), 0u);
  EXPECT_LE(DefaultTensorMemoryBudget(), physical);
}

TEST(TypesTest, Names) {
  EXPECT_EQ(DataTypeString(DT_FLOAT), "float");
  EXPECT_EQ(DataTypeString(DT_FLOAT_REF), "float_ref");
  EXPECT_EQ(*DataTypeFromString("int64"), DT_INT64);
  EXPECT_FALSE(DataTypeFromString("complex").ok());
  EXPECT_EQ(RemoveRefType(MakeRefType(DT_INT32)), DT_INT32);
}

// A dtype from a message can be any int32 (found by //core:tensor_proto_fuzz: a
// TensorProto with dtype 10^9 took DataTypeString 10^7 calls deep, past the stack).
TEST(TypesTest, AnyValueFromTheWireHasAName) {
  EXPECT_EQ(DataTypeString(static_cast<DataType>(1000000000)), "unknown dtype 1000000000");
  EXPECT_EQ(DataTypeString(static_cast<DataType>(-5)), "unknown dtype -5");
  EXPECT_EQ(DataTypeString(static_cast<DataType>(250)), "unknown dtype 250");
  EXPECT_FALSE(IsRefType(static_cast<DataType>(1000000000)));
  EXPECT_EQ(RemoveRefType(static_cast<DataType>(250)), static_cast<DataType>(250));
  TensorProto proto;
  proto.set_dtype(static_cast<DataType>(1000000000));
  absl::StatusOr<Tensor> tensor = Tensor::FromProto(proto);
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(tensor.status().message(), "unknown dtype 1000000000"))
      << tensor.status();
}

}  // namespace
}  // namespace overseer

namespace overseer {
namespace {

// With the buffer cache on (binaries turn it on with --tensor_buffer_cache_bytes; it is
// off by default), freed large buffers are kept for the next tensor of their size.
class TensorCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { SetTensorBufferCacheBytes(256 << 20); }
  void TearDown() override { SetTensorBufferCacheBytes(0); }
};

// A large tensor's memory goes back to the process's cache when freed, and the next
// tensor of that size reuses it (no fresh pages to fault in) still zero-filled.
TEST_F(TensorCacheTest, LargeBuffersAreRecycledZeroFilled) {
  const TensorShape shape({3 << 20});  // 12 MiB of floats.
  const void* first = nullptr;
  {
    Tensor t(DT_FLOAT, shape);
    first = t.data<float>();
    t.flat<float>().setConstant(7.0f);
  }
  Tensor again(DT_FLOAT, shape);
  EXPECT_EQ(again.data<float>(), first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % (2 << 20), 0u);
  auto flat = again.flat<float>();
  for (int64_t i = 0; i < flat.size(); i += 4093) ASSERT_EQ(flat(i), 0.0f) << i;
  EXPECT_EQ(flat(flat.size() - 1), 0.0f);

  // A different size does not take it; both stay usable.
  Tensor other(DT_FLOAT, TensorShape({5 << 20}));
  EXPECT_NE(other.data<float>(), again.data<float>());
  EXPECT_EQ(other.flat<float>()(0), 0.0f);
}

// An uninitialised tensor has its dtype and shape and usable memory from the same
// cache (its contents are whatever the caller writes), small or large.
TEST_F(TensorCacheTest, UninitializedTensorsTakeCachedMemoryWithoutWriting) {
  const TensorShape shape({(3 << 20) + 1});  // Over 12 MiB of int32.
  const void* first = nullptr;
  {
    Tensor t(DT_INT32, shape);
    first = t.data<int32_t>();
  }
  Tensor u = Tensor::Uninitialized(DT_INT32, shape);
  EXPECT_EQ(u.dtype(), DT_INT32);
  EXPECT_EQ(u.shape(), shape);
  EXPECT_EQ(u.data<int32_t>(), first);
  u.flat<int32_t>().setConstant(5);
  EXPECT_EQ(u.flat<int32_t>()(shape.num_elements() - 1), 5);
  EXPECT_EQ(u.TotalBytes(), static_cast<size_t>(shape.num_elements()) * 4);

  Tensor small = Tensor::Uninitialized(DT_DOUBLE, TensorShape({2, 3}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data<double>()) % 64, 0u);
  small.flat<double>().setConstant(1.5);
  EXPECT_TRUE(small.Equals(
      Tensor::FromVector<double>({1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, TensorShape({2, 3}))));
  EXPECT_EQ(Tensor::Uninitialized(DT_BOOL, TensorShape({0})).NumElements(), 0);
}

}  // namespace
}  // namespace overseer
