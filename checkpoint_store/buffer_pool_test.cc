#include "checkpoint_store/buffer_pool.h"

#include <string>

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(BufferPoolTest, EmptyPoolGivesEmptyBuffer) {
  BufferPool pool(1 << 20);
  EXPECT_TRUE(pool.Take().empty());
  EXPECT_EQ(pool.cached_bytes(), 0u);
}

TEST(BufferPoolTest, GivenBufferComesBackWithItsStorage) {
  BufferPool pool(1 << 20);
  std::string buffer(4096, 'x');
  const char* storage = buffer.data();
  const size_t capacity = buffer.capacity();
  pool.Give(std::move(buffer));
  EXPECT_EQ(pool.cached_bytes(), capacity);
  std::string again = pool.Take();
  EXPECT_EQ(again.data(), storage);
  EXPECT_GE(again.capacity(), 4096u);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  EXPECT_TRUE(pool.Take().empty());
}

TEST(BufferPoolTest, LargestIsTakenFirst) {
  BufferPool pool(1 << 20);
  std::string a(1000, 'a'), b(20000, 'b'), c(3000, 'c');
  pool.Give(std::move(a));
  pool.Give(std::move(b));
  pool.Give(std::move(c));
  EXPECT_EQ(pool.Take()[0], 'b');
  EXPECT_EQ(pool.Take()[0], 'c');
  EXPECT_EQ(pool.Take()[0], 'a');
}

TEST(BufferPoolTest, BuffersBeyondTheLimitAreFreed) {
  BufferPool pool(10000);
  pool.Give(std::string(6000, 'a'));
  const size_t first = pool.cached_bytes();
  EXPECT_GE(first, 6000u);
  pool.Give(std::string(6000, 'b'));  // Would exceed 10000: dropped.
  EXPECT_EQ(pool.cached_bytes(), first);
  EXPECT_EQ(pool.Take()[0], 'a');
  EXPECT_TRUE(pool.Take().empty());
}

TEST(ReserveBufferTest, LargeEnoughBufferIsKept) {
  std::string buffer(1000, 'x');
  buffer.reserve(5000);
  const char* storage = buffer.data();
  ReserveBuffer(&buffer, 4000);
  EXPECT_EQ(buffer.data(), storage);
  EXPECT_EQ(buffer, std::string(1000, 'x'));
}

TEST(ReserveBufferTest, GrownBufferIsEmptyWithTheCapacity) {
  std::string buffer(1000, 'x');
  ReserveBuffer(&buffer, 8 << 20);
  EXPECT_TRUE(buffer.empty());
  EXPECT_GE(buffer.capacity(), size_t{8} << 20);
  buffer.resize(8 << 20, 'y');  // The advised storage is ordinary memory.
  EXPECT_EQ(buffer[(8 << 20) - 1], 'y');
}

}  // namespace
}  // namespace overseer
