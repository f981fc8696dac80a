#ifndef OVERSEER_EXAMPLES_CLASSIFIER_H_
#define OVERSEER_EXAMPLES_CLASSIFIER_H_

// The example classifier: a two-layer MLP with a softmax output, trained with Adam.
// Later examples run the same model under a cluster; this is the graph they share.

#include <cstdint>

#include "absl/status/statusor.h"
#include "client/graph/device_setter.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"

namespace overseer {
namespace examples {

struct ClassifierOptions {
  int64_t num_features = 784;
  int64_t num_classes = 10;
  int64_t hidden_units = 128;
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
  Operation train;  // one Adam step; increments global_step
  Operation init;   // initialises every variable
  Variable global_step;
};

// Builds the model in `scope`'s graph. Errors recorded in the scope are returned.
absl::StatusOr<Classifier> BuildClassifier(const Scope& scope, const ClassifierOptions& options);

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_CLASSIFIER_H_
