#ifndef OVERSEER_EXAMPLES_CLASSIFIER_H_
#define OVERSEER_EXAMPLES_CLASSIFIER_H_

// The example classifier, trained with Adam: a two-layer MLP with a softmax output, or
// the convolutional network of TensorFlow's Fashion-MNIST tutorial (two 5x5
// convolutions of 32 and 64 filters, each followed by 2x2 max pooling, a dense layer of
// 1024 units, dropout, softmax). Or, trained with Adagrad and updated sparsely, a model
// of categorical features: each pixel quantized to one of 16 levels is one id of a
// vocabulary of 16 per pixel, looked up in an embedding table split into shards (one per
// ps with a device setter), the image's embeddings summed, then softmax (a linear model
// of the categorical features, as TensorFlow's "wide" models).
// Later examples run the same model under a cluster; this is the graph they share.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/graph/device_setter.h"
#include "client/graph/graph.h"
#include "client/graph/optimizers.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"
#include "client/training/sync_replicas_optimizer.h"

namespace overseer {
namespace examples {

enum class ModelKind { kMlp, kCnn, kEmbedding };

struct ClassifierOptions {
  ModelKind model = ModelKind::kMlp;
  int64_t num_features = 784;  // The CNN needs 784: 28x28 images.
  int64_t num_classes = 10;
  int64_t hidden_units = 128;  // The MLP's hidden layer; the CNN's dense layer is 1024.
  // 0: the model's default (Adam's 0.001; the embedding model's Adagrad 0.1).
  double learning_rate = 0;
  // The embedding model: levels per pixel (features in [0, 1]), the embedding's width
  // and the table's shards (split by id modulo the shards, TensorFlow's "mod").
  int64_t embedding_levels = 16;
  int64_t embedding_dim = 32;
  int64_t embedding_shards = 2;
  int64_t seed = 1;
  // For between-graph replicated training: when set (not owned; must outlive
  // BuildClassifier), the variables and the global step are placed on its ps tasks
  // and every other op on its worker device.
  ReplicaDeviceSetter* device_setter = nullptr;
  // Synchronous training (SyncReplicasOptimizer) when > 0: each update is the mean of
  // this many workers' gradients; total_num_replicas: the workers (0: the same).
  int replicas_to_aggregate = 0;
  int total_num_replicas = 0;
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
  Operation train;  // one optimizer step; increments global_step
  // The embedding model's table shards ("embedding/shard_N"); empty for the others.
  std::vector<Variable> embedding_shards;
  Operation init;  // initialises every variable
  Variable global_step;
  // The optimizer, and with replicas_to_aggregate its synchronous wrapper (whose
  // session hook the trainer adds).
  std::shared_ptr<Optimizer> optimizer;
  std::shared_ptr<SyncReplicasOptimizer> sync_replicas;
};

// The CNN's keep probability while training (TensorFlow's tutorial: dropout rate 0.4).
inline constexpr float kTrainKeepProb = 0.6f;

// "mlp", "cnn" or "embedding"; INVALID_ARGUMENT naming the choices otherwise.
absl::StatusOr<ModelKind> ModelKindFromName(absl::string_view name);

// Builds the model in `scope`'s graph. Errors recorded in the scope are returned.
absl::StatusOr<Classifier> BuildClassifier(const Scope& scope, const ClassifierOptions& options);

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_CLASSIFIER_H_
