#include "examples/mnist_data.h"

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/tensor_eigen.h"
#include "gtest/gtest.h"

namespace overseer {
namespace examples {
namespace {

std::string TmpPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

TEST(MnistDataTest, ReadsIdxFiles) {
  // Two 2x2 images.
  WriteBytes(TmpPath("img"), Be32(0x803) + Be32(2) + Be32(2) + Be32(2) +
                                 std::string("\x00\xff\x80\x00\x01\x02\x03\x04", 8));
  WriteBytes(TmpPath("lbl"), Be32(0x801) + Be32(2) + std::string("\x07\x03", 2));
  auto d = ReadIdx(TmpPath("img"), TmpPath("lbl"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->num_examples, 2);
  EXPECT_EQ(d->num_features, 4);
  EXPECT_FLOAT_EQ(d->images[1], 1.0f);
  EXPECT_EQ(d->labels[0], 7);
  Tensor x, y;
  d->Batch(1, 3, &x, &y);  // wraps around
  EXPECT_EQ(x.shape(), TensorShape({3, 4}));
  EXPECT_EQ(y.flat<int64_t>()(0), 3);
  EXPECT_EQ(y.flat<int64_t>()(1), 7);
}

TEST(MnistDataTest, RejectsBadFiles) {
  WriteBytes(TmpPath("bad_magic"), Be32(0x802) + Be32(1) + Be32(1) + Be32(1) + "x");
  WriteBytes(TmpPath("lbl1"), Be32(0x801) + Be32(1) + std::string("\x01", 1));
  auto s = ReadIdx(TmpPath("bad_magic"), TmpPath("lbl1")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bad_magic"), std::string::npos);

  WriteBytes(TmpPath("truncated"), Be32(0x803) + Be32(1) + Be32(2) + Be32(2) + "ab");
  s = ReadIdx(TmpPath("truncated"), TmpPath("lbl1")).status();
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s;

  WriteBytes(TmpPath("one"), Be32(0x803) + Be32(1) + Be32(1) + Be32(1) + "a");
  WriteBytes(TmpPath("bad_label"), Be32(0x801) + Be32(1) + std::string("\x0b", 1));
  EXPECT_FALSE(ReadIdx(TmpPath("one"), TmpPath("bad_label")).ok());
  EXPECT_EQ(ReadIdx(TmpPath("missing"), TmpPath("lbl1")).status().code(),
            absl::StatusCode::kNotFound);
}

// `bytes` gzipped, as Debian's dataset packages ship the IDX files.
void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
}

const std::string kImages =
    Be32(0x803) + Be32(2) + Be32(1) + Be32(2) + std::string("\x00\xff\x80\x01", 4);
const std::string kLabels = Be32(0x801) + Be32(2) + std::string("\x09\x04", 2);

// A directory of the four files, as train_classifier and the trainers read it: each
// file plain or gzipped (name.gz), as MNIST's and Fashion-MNIST's downloads and
// Debian's dataset-fashion-mnist have them.
TEST(MnistDataTest, ReadsADirectoryOfGzippedOrPlainFiles) {
  const std::string dir = TmpPath("mixed");
  std::filesystem::create_directories(dir);
  WriteGzip(dir + "/train-images-idx3-ubyte.gz", kImages);
  WriteGzip(dir + "/train-labels-idx1-ubyte.gz", kLabels);
  WriteBytes(dir + "/t10k-images-idx3-ubyte", kImages);
  WriteGzip(dir + "/t10k-labels-idx1-ubyte.gz", kLabels);
  auto data = ReadMnist(dir);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train.num_examples, 2);
  EXPECT_EQ(data->train.num_features, 2);
  EXPECT_FLOAT_EQ(data->train.images[1], 1.0f);
  EXPECT_EQ(data->test.labels[0], 9);
}

TEST(MnistDataTest, ADirectoryWithoutTheFilesIsNotFoundNamingThem) {
  const std::string dir = TmpPath("empty_dir");
  std::filesystem::create_directories(dir);
  const absl::Status s = ReadMnist(dir).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("train-images-idx3-ubyte[.gz]"), std::string::npos) << s;
}

// A damaged gzip file is INVALID_ARGUMENT naming it, not a short read taken for data.
TEST(MnistDataTest, ACorruptGzipFileIsInvalidArgument) {
  const std::string dir = TmpPath("corrupt");
  std::filesystem::create_directories(dir);
  WriteGzip(dir + "/images.gz", kImages + std::string(4096, '\x01'));
  std::string bytes;
  {
    std::ifstream in(dir + "/images.gz", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[bytes.size() / 2] ^= 0x5a;  // Inside the deflate stream.
  bytes.resize(bytes.size() - 6);   // And cut short.
  WriteBytes(dir + "/images.gz", bytes);
  WriteGzip(dir + "/labels.gz", kLabels);
  const absl::Status s = ReadIdx(dir + "/images.gz", dir + "/labels.gz").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("images.gz"), std::string::npos) << s;
}

TEST(MnistDataTest, SyntheticIsDeterministicAndBalanced) {
  TrainTest a = MakeSynthetic(1000, 100, 42), b = MakeSynthetic(1000, 100, 42);
  EXPECT_EQ(a.train.images, b.train.images);
  EXPECT_EQ(a.test.labels, b.test.labels);
  std::vector<int> counts(10);
  for (int64_t l : a.train.labels) counts[l]++;
  for (int c : counts) EXPECT_GT(c, 50);
  EXPECT_NE(MakeSynthetic(10, 1, 1).train.images, MakeSynthetic(10, 1, 2).train.images);
}

}  // namespace
}  // namespace examples
}  // namespace overseer
