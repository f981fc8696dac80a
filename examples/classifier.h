#ifndef OVERSEER_EXAMPLES_CLASSIFIER_H_
#define OVERSEER_EXAMPLES_CLASSIFIER_H_

// The example classifier, trained with Adam: a two-layer MLP with a softmax output, or
// the convolutional network of TensorFlow's Fashion-MNIST tutorial (two 5x5
// convolutions of 32 and 64 filters, each followed by 2x2 max pooling, a dense layer of
// 1024 units, dropout, softmax). Later examples run the same model under a cluster;
// this is the graph they share.

#include <cstdint>

#include "absl/status/statusor.h"
#include "client/graph/device_setter.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"

namespace overseer {
namespace examples {

enum class ModelKind { kMlp, kCnn };

struct ClassifierOptions {
  ModelKind model = ModelKind::kMlp;
  int64_t num_features = 784;  // The CNN needs 784: 28x28 images.
  int64_t num_classes = 10;
  int64_t hidden_units = 128;  // The MLP's hidden layer; the CNN's dense layer is 1024.
  double learning_rate = 0.001;
  int64_t seed = 1;
  // For between-graph replicated training: when set (not owned; must outlive
  // BuildClassifier), the variables and the global step are placed on its ps tasks
  // and every other op on its worker device.
  ReplicaDeviceSetter* device_setter = nullptr;
};

// Handles to the nodes a trainer feeds and runs.
struct Classifier {
  Output images;    // float [batch, num_features] placeholder "images"
  Output labels;    // int64 [batch] placeholder "labels"
  Output loss;      // mean cross-entropy, scalar
  Output accuracy;  // fraction of correct predictions, scalar
  // The CNN's dropout keep probability: float scalar "keep_prob", 1 unless fed (feed
  // kTrainKeepProb in training steps). Null for the MLP.
  Output keep_prob;
  Operation train;  // one Adam step; increments global_step
  Operation init;   // initialises every variable
  Variable global_step;
};

// The CNN's keep probability while training (TensorFlow's tutorial: dropout rate 0.4).
inline constexpr float kTrainKeepProb = 0.6f;

// Builds the model in `scope`'s graph. Errors recorded in the scope are returned.
absl::StatusOr<Classifier> BuildClassifier(const Scope& scope, const ClassifierOptions& options);

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_CLASSIFIER_H_
