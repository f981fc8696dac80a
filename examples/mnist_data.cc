#include "examples/mnist_data.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>

#include "absl/strings/str_cat.h"

namespace overseer {
namespace examples {
namespace {

constexpr int kSide = 28;
constexpr int kClasses = 10;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return v;
}

}  // namespace

void Dataset::Batch(int64_t start, int64_t count, Tensor* x, Tensor* y) const {
  *x = Tensor(DT_FLOAT, TensorShape({count, num_features}));
  *y = Tensor(DT_INT64, TensorShape({count}));
  float* xd = x->data<float>();
  int64_t* yd = y->data<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = (start + i) % num_examples;
    std::copy_n(images.data() + row * num_features, num_features, xd + i * num_features);
    yd[i] = labels[row];
  }
}

absl::StatusOr<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path) {
  auto images = ReadFile(images_path);
  if (!images.ok()) return images.status();
  auto labels = ReadFile(labels_path);
  if (!labels.ok()) return labels.status();
  if (images->size() < 16 || BigEndian32(*images, 0) != 0x00000803) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, " is not an IDX image file (magic 0x00000803)"));
  }
  if (labels->size() < 8 || BigEndian32(*labels, 0) != 0x00000801) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels_path, " is not an IDX label file (magic 0x00000801)"));
  }
  Dataset d;
  d.num_examples = BigEndian32(*images, 4);
  const int64_t rows = BigEndian32(*images, 8), cols = BigEndian32(*images, 12);
  d.num_features = rows * cols;
  if (images->size() != 16 + static_cast<size_t>(d.num_examples * d.num_features)) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, " has ", images->size(), " bytes but its header promises ",
                     d.num_examples, " images of ", rows, "x", cols, " (truncated?)"));
  }
  if (BigEndian32(*labels, 4) != d.num_examples ||
      labels->size() != 8 + static_cast<size_t>(d.num_examples)) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path,
                                                   " does not hold one label for each of the ",
                                                   d.num_examples, " images of ", images_path));
  }
  d.images.resize(d.num_examples * d.num_features);
  for (size_t i = 0; i < d.images.size(); ++i) {
    d.images[i] = static_cast<uint8_t>((*images)[16 + i]) / 255.0f;
  }
  d.labels.resize(d.num_examples);
  for (int64_t i = 0; i < d.num_examples; ++i) {
    d.labels[i] = static_cast<uint8_t>((*labels)[8 + i]);
    if (d.labels[i] >= kClasses) {
      return absl::InvalidArgumentError(absl::StrCat(labels_path, ": label ", d.labels[i],
                                                     " of example ", i, " is not in [0, 10)"));
    }
  }
  return d;
}

absl::StatusOr<TrainTest> ReadMnist(const std::string& dir) {
  TrainTest tt;
  auto train = ReadIdx(dir + "/train-images-idx3-ubyte", dir + "/train-labels-idx1-ubyte");
  if (!train.ok()) return train.status();
  auto test = ReadIdx(dir + "/t10k-images-idx3-ubyte", dir + "/t10k-labels-idx1-ubyte");
  if (!test.ok()) return test.status();
  tt.train = *std::move(train);
  tt.test = *std::move(test);
  return tt;
}

TrainTest MakeSynthetic(int64_t num_train, int64_t num_test, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> coord(4, kSide - 5);
  // Each class: four random strokes (short lines) drawn on a blank grid.
  std::vector<std::vector<float>> patterns(kClasses, std::vector<float>(kSide * kSide, 0));
  for (auto& p : patterns) {
    for (int stroke = 0; stroke < 4; ++stroke) {
      int r = coord(rng), c = coord(rng);
      const int dr = static_cast<int>(rng() % 3) - 1, dc = static_cast<int>(rng() % 3) - 1;
      for (int k = 0; k < 8; ++k) {
        if (r >= 0 && r < kSide && c >= 0 && c < kSide) p[r * kSide + c] = 1.0f;
        r += dr;
        c += dc == 0 && dr == 0 ? 1 : dc;
      }
    }
  }
  std::normal_distribution<float> noise(0.0f, 0.25f);
  std::uniform_real_distribution<float> intensity(0.6f, 1.0f);
  auto make = [&](int64_t n) {
    Dataset d;
    d.num_examples = n;
    d.num_features = kSide * kSide;
    d.images.resize(n * d.num_features);
    d.labels.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      const int label = static_cast<int>(rng() % kClasses);
      const int sr = static_cast<int>(rng() % 3) - 1, sc = static_cast<int>(rng() % 3) - 1;
      const float scale = intensity(rng);
      float* img = d.images.data() + i * d.num_features;
      for (int r = 0; r < kSide; ++r) {
        for (int c = 0; c < kSide; ++c) {
          const int pr = r - sr, pc = c - sc;
          float v = (pr >= 0 && pr < kSide && pc >= 0 && pc < kSide)
                        ? patterns[label][pr * kSide + pc] * scale
                        : 0.0f;
          img[r * kSide + c] = std::clamp(v + noise(rng), 0.0f, 1.0f);
        }
      }
      d.labels[i] = label;
    }
    return d;
  };
  TrainTest tt;
  tt.train = make(num_train);
  tt.test = make(num_test);
  return tt;
}

}  // namespace examples
}  // namespace overseer
