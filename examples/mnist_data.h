#ifndef OVERSEER_EXAMPLES_MNIST_DATA_H_
#define OVERSEER_EXAMPLES_MNIST_DATA_H_

// Data for the example classifier: MNIST or Fashion-MNIST in IDX files (gzipped or
// not; Fashion-MNIST by default, from Debian's dataset-fashion-mnist), or a
// deterministic synthetic stand-in with the same layout (28x28 grey images, 10
// classes) for tests that need speed.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace overseer {
namespace examples {

struct Dataset {
  int64_t num_examples = 0;
  int64_t num_features = 0;     // 784 for MNIST
  std::vector<float> images;    // num_examples x num_features, values in [0, 1]
  std::vector<int64_t> labels;  // num_examples values in [0, 10)

  // Rows [start, start + count) (wrapping around) as a [count, features] float
  // tensor and a [count] int64 tensor.
  void Batch(int64_t start, int64_t count, Tensor* x, Tensor* y) const;
};

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Where Debian's dataset-fashion-mnist installs Fashion-MNIST: the default data of the
// demo, train_classifier and cluster_trainer.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// Reads an IDX image file (magic 0x00000803) and label file (0x00000801), each plain
// or gzipped. INVALID_ARGUMENT naming the file on a bad magic, a truncated or damaged
// file, mismatched counts or a label outside [0, 10); NOT_FOUND if a file is missing.
absl::StatusOr<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path);

// Reads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte from `dir`, each as it is or with ".gz". NOT_FOUND naming the
// first file that is in neither form.
absl::StatusOr<TrainTest> ReadMnist(const std::string& dir);

// A deterministic synthetic dataset: each class is a random pattern of strokes on a
// 28x28 grid; examples are their class pattern, randomly shifted by up to one pixel,
// scaled in intensity and with pixel noise. The same `seed` always gives the same data.
TrainTest MakeSynthetic(int64_t num_train, int64_t num_test, uint64_t seed);

// Which data an example trains on (its --synthetic, --data_dir, --num_train,
// --num_test and --seed flags).
struct DataChoice {
  bool synthetic = false;
  std::string data_dir = kFashionMnistDir;
  int64_t num_train = 0;  // Synthetic examples.
  int64_t num_test = 0;
  uint64_t seed = 0;
};

// OK if `dir` exists; else NOT_FOUND naming it (and the Debian package for the default)
// and --data_dir / --synthetic.
absl::Status CheckDataDir(const std::string& dir);

// The data `choice` names, and in `description` a line saying what it is ("data:
// Fashion-MNIST from DIR (60000 train, 10000 test)"). A missing directory or file is
// NOT_FOUND naming it, the Debian package and --synthetic.
absl::StatusOr<TrainTest> LoadData(const DataChoice& choice, std::string* description);

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_MNIST_DATA_H_
