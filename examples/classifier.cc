#include "examples/classifier.h"

#include "client/graph/ops.h"
#include "client/graph/optimizers.h"
#include "client/graph/variables_init.h"
#include "core/status_macros.h"

namespace overseer {
namespace examples {

absl::StatusOr<Classifier> BuildClassifier(const Scope& root, const ClassifierOptions& o) {
  ReplicaDeviceSetter* setter = o.device_setter;
  const Scope scope = setter != nullptr ? setter->ForOps(root) : root;
  // The scope of a variable of `shape` (on a ps task with a device setter).
  auto var_scope = [setter](const Scope& s, const TensorShape& shape, DataType dtype) {
    return setter != nullptr ? setter->ForVariable(s, shape, dtype) : s;
  };
  Classifier m;
  m.images =
      ops::Placeholder(scope.WithOpName("images"), DT_FLOAT, PartialShape({-1, o.num_features}));
  m.labels = ops::Placeholder(scope.WithOpName("labels"), DT_INT64, PartialShape({-1}));

  Scope hidden = scope.NewSubScope("hidden");
  Variable w1 =
      MakeVariable(var_scope(hidden.WithOpName("weights"),
                             TensorShape({o.num_features, o.hidden_units}), DT_FLOAT),
                   GlorotUniformInitializer(TensorShape({o.num_features, o.hidden_units}), o.seed));
  Variable b1 =
      MakeVariable(var_scope(hidden.WithOpName("biases"), TensorShape({o.hidden_units}), DT_FLOAT),
                   ZerosInitializer(TensorShape({o.hidden_units})));
  Output h =
      ops::Relu(hidden, ops::BiasAdd(hidden, ops::MatMul(hidden, m.images, w1.value), b1.value));

  Scope softmax = scope.NewSubScope("softmax");
  Variable w2 = MakeVariable(
      var_scope(softmax.WithOpName("weights"), TensorShape({o.hidden_units, o.num_classes}),
                DT_FLOAT),
      GlorotUniformInitializer(TensorShape({o.hidden_units, o.num_classes}), o.seed + 1));
  Variable b2 =
      MakeVariable(var_scope(softmax.WithOpName("biases"), TensorShape({o.num_classes}), DT_FLOAT),
                   ZerosInitializer(TensorShape({o.num_classes})));
  Output logits =
      ops::BiasAdd(softmax.WithOpName("logits"), ops::MatMul(softmax, h, w2.value), b2.value);

  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(scope.WithOpName("xent"), logits, m.labels);
  m.loss = ops::Mean(scope.WithOpName("loss"), xent.loss, {0});
  Output correct = ops::Equal(scope, ops::ArgMax(scope, logits, 1), m.labels);
  m.accuracy = ops::Mean(scope.WithOpName("accuracy"), ops::Cast(scope, correct, DT_FLOAT), {0});

  ASSIGN_OR_RETURN(m.global_step, GetOrCreateGlobalStep(var_scope(scope, TensorShape(), DT_INT64)));
  AdamOptimizer adam(o.learning_rate);
  ASSIGN_OR_RETURN(m.train, adam.Minimize(scope.WithOpName("train"), m.loss, &m.global_step));
  m.init = GlobalVariablesInitializer(scope.WithOpName("init"));
  RETURN_IF_ERROR(scope.status());
  return m;
}

}  // namespace examples
}  // namespace overseer
