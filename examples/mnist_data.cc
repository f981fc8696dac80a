#include "examples/mnist_data.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"

namespace overseer {
namespace examples {
namespace {

constexpr int kSide = 28;
constexpr int kClasses = 10;

// The bytes of `path`, gunzipped if it is a gzip file (zlib reads a plain file as is).
absl::StatusOr<std::string> ReadFile(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (in == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  gzbuffer(in, 1 << 20);
  std::string bytes;
  std::string chunk(1 << 20, '\0');
  int n = 0;
  while ((n = gzread(in, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0) {
    bytes.append(chunk.data(), static_cast<size_t>(n));
  }
  int code = Z_OK;
  const std::string error = gzerror(in, &code);
  gzclose(in);
  if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " cannot be read as a gzip file (", error, "): damaged or cut short?"));
  }
  return bytes;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// `dir`/`name`, or `dir`/`name`.gz; NOT_FOUND naming both if neither exists.
absl::StatusOr<std::string> IdxFile(const std::string& dir, const std::string& name) {
  const std::string plain = absl::StrCat(dir, "/", name);
  if (Exists(plain)) return plain;
  if (Exists(plain + ".gz")) return plain + ".gz";
  return absl::NotFoundError(absl::StrCat(
      dir, " has no ", name,
      "[.gz]: --data_dir takes a directory of the four MNIST or "
      "Fashion-MNIST IDX files, gzipped or not (Debian: apt install dataset-fashion-mnist)"));
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
  std::string files[4];
  const char* names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<std::string> file = IdxFile(dir, names[i]);
    if (!file.ok()) return file.status();
    files[i] = *std::move(file);
  }
  auto train = ReadIdx(files[0], files[1]);
  if (!train.ok()) return train.status();
  auto test = ReadIdx(files[2], files[3]);
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

absl::Status CheckDataDir(const std::string& dir) {
  if (Exists(dir)) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      "no data at ", dir, dir == kFashionMnistDir ? " (apt install dataset-fashion-mnist)" : "",
      "; give --data_dir a directory of MNIST or Fashion-MNIST IDX files, or --synthetic"));
}

absl::StatusOr<TrainTest> LoadData(const DataChoice& choice, std::string* description) {
  if (choice.synthetic) {
    TrainTest data = MakeSynthetic(choice.num_train, choice.num_test, choice.seed);
    *description = absl::StrCat("data: synthetic 28x28, 10 classes (", data.train.num_examples,
                                " train, ", data.test.num_examples, " test)");
    return data;
  }
  if (absl::Status dir = CheckDataDir(choice.data_dir); !dir.ok()) return dir;
  absl::StatusOr<TrainTest> data = ReadMnist(choice.data_dir);
  if (!data.ok()) return data.status();
  *description =
      absl::StrCat("data: ", choice.data_dir == kFashionMnistDir ? "Fashion-MNIST" : "IDX files",
                   " from ", choice.data_dir, " (", data->train.num_examples, " train, ",
                   data->test.num_examples, " test)");
  return data;
}

}  // namespace examples
}  // namespace overseer
