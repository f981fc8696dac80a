#include "examples/classifier.h"

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/graph/embedding.h"
#include "client/graph/ops.h"
#include "client/graph/optimizers.h"
#include "client/graph/variables_init.h"
#include "core/status_macros.h"

namespace overseer {
namespace examples {

absl::StatusOr<ModelKind> ModelKindFromName(absl::string_view name) {
  if (name == "mlp") return ModelKind::kMlp;
  if (name == "cnn") return ModelKind::kCnn;
  if (name == "embedding") return ModelKind::kEmbedding;
  return absl::InvalidArgumentError(
      absl::StrCat("--model must be mlp, cnn or embedding, got '", name, "'"));
}

absl::StatusOr<Classifier> BuildClassifier(const Scope& root, const ClassifierOptions& o) {
  ReplicaDeviceSetter* setter = o.device_setter;
  const Scope scope = setter != nullptr ? setter->ForOps(root) : root;
  // The scope of a variable of `shape` (on a ps task with a device setter).
  auto var_scope = [setter](const Scope& s, const TensorShape& shape, DataType dtype) {
    return setter != nullptr ? setter->ForVariable(s, shape, dtype) : s;
  };
  if (!(o.learning_rate >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the learning rate must be positive (0: the model's default), got ", o.learning_rate));
  }
  Classifier m;
  m.images =
      ops::Placeholder(scope.WithOpName("images"), DT_FLOAT, PartialShape({-1, o.num_features}));
  m.labels = ops::Placeholder(scope.WithOpName("labels"), DT_INT64, PartialShape({-1}));

  // A dense layer: relu(x w + b) (no relu for the logits).
  auto dense = [&](const Scope& s, const Output& x, int64_t in, int64_t out, int64_t seed,
                   bool relu) -> Output {
    Variable w = MakeVariable(var_scope(s.WithOpName("weights"), TensorShape({in, out}), DT_FLOAT),
                              GlorotUniformInitializer(TensorShape({in, out}), seed));
    Variable b = MakeVariable(var_scope(s.WithOpName("biases"), TensorShape({out}), DT_FLOAT),
                              ZerosInitializer(TensorShape({out})));
    Output y = ops::BiasAdd(relu ? s : s.WithOpName("logits"), ops::MatMul(s, x, w.value), b.value);
    return relu ? ops::Relu(s, y) : y;
  };
  Output logits;
  if (o.model == ModelKind::kMlp) {
    Output h =
        dense(scope.NewSubScope("hidden"), m.images, o.num_features, o.hidden_units, o.seed, true);
    logits =
        dense(scope.NewSubScope("softmax"), h, o.hidden_units, o.num_classes, o.seed + 1, false);
  } else if (o.model == ModelKind::kEmbedding) {
    if (o.embedding_levels < 2 || o.embedding_dim < 1 || o.embedding_shards < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the embedding model needs at least 2 levels, a positive width and a shard; got ",
          o.embedding_levels, " levels, width ", o.embedding_dim, ", ", o.embedding_shards,
          " shards"));
    }
    const Scope s = scope.NewSubScope("embedding");
    // Pixel p at level l (x in [0, 1] scaled to [0, levels), values outside clamped) is
    // id p * levels + l.
    const float top = static_cast<float>(o.embedding_levels - 1);
    Output scaled = ops::Floor(s, ops::Mul(s, m.images, static_cast<float>(o.embedding_levels)));
    Output level = ops::Cast(s, ops::Minimum(s, ops::Maximum(s, scaled, 0.0f), top), DT_INT64);
    Output offsets =
        ops::Mul(s, ops::Range(s, int64_t{0}, o.num_features, int64_t{1}), o.embedding_levels);
    Output ids = ops::Add(s, level, offsets);
    const int64_t vocab = o.num_features * o.embedding_levels;
    std::vector<Output> shards;
    for (int64_t k = 0; k < o.embedding_shards; ++k) {
      // With kMod, shard k holds ids k, k + n, k + 2n, ...
      const TensorShape shape(
          {(vocab - k + o.embedding_shards - 1) / o.embedding_shards, o.embedding_dim});
      Variable shard = MakeVariable(
          var_scope(s.WithOpName(absl::StrCat("shard_", k)), shape, DT_FLOAT),
          TruncatedNormalInitializer(shape, 1.0 / std::sqrt(static_cast<double>(o.num_features)),
                                     o.seed + k));
      m.embedding_shards.push_back(shard);
      shards.push_back(shard.value);
    }
    ASSIGN_OR_RETURN(Output rows, EmbeddingLookup(s, shards, ids, PartitionStrategy::kMod));
    Variable b =
        MakeVariable(var_scope(s.WithOpName("biases"), TensorShape({o.embedding_dim}), DT_FLOAT),
                     ZerosInitializer(TensorShape({o.embedding_dim})));
    Output h = ops::BiasAdd(s, ops::Sum(s, rows, {1}), b.value);
    logits = dense(scope.NewSubScope("softmax"), h, o.embedding_dim, o.num_classes,
                   o.seed + o.embedding_shards, false);
  } else {
    if (o.num_features != 28 * 28) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the CNN takes 28x28 images (784 features), got ", o.num_features, " features"));
    }
    // A 5x5 convolution of `out` filters, relu, then 2x2 max pooling.
    auto conv = [&](const Scope& s, const Output& x, int64_t in, int64_t out,
                    int64_t seed) -> Output {
      const TensorShape shape({5, 5, in, out});
      Variable w = MakeVariable(var_scope(s.WithOpName("weights"), shape, DT_FLOAT),
                                GlorotUniformInitializer(shape, seed));
      Variable b = MakeVariable(var_scope(s.WithOpName("biases"), TensorShape({out}), DT_FLOAT),
                                ZerosInitializer(TensorShape({out})));
      Output y =
          ops::Relu(s, ops::BiasAdd(s, ops::Conv2D(s, x, w.value, {1, 1, 1, 1}, "SAME"), b.value));
      return ops::MaxPool(s, y, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
    };
    Output image = ops::Reshape(scope, m.images, ops::Const(scope, {-1, 28, 28, 1}));
    Output c1 = conv(scope.NewSubScope("conv1"), image, 1, 32, o.seed);
    Output c2 = conv(scope.NewSubScope("conv2"), c1, 32, 64, o.seed + 1);
    Output flat = ops::Reshape(scope, c2, ops::Const(scope, {-1, 7 * 7 * 64}));
    Output h = dense(scope.NewSubScope("dense"), flat, 7 * 7 * 64, 1024, o.seed + 2, true);
    m.keep_prob = ops::PlaceholderWithDefault(scope.WithOpName("keep_prob"), 1.0f, PartialShape());
    Output dropped = ops::Dropout(scope, h, m.keep_prob, o.seed + 3);
    logits = dense(scope.NewSubScope("softmax"), dropped, 1024, o.num_classes, o.seed + 4, false);
  }

  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(scope.WithOpName("xent"), logits, m.labels);
  m.loss = ops::Mean(scope.WithOpName("loss"), xent.loss, {0});
  Output correct = ops::Equal(scope, ops::ArgMax(scope, logits, 1), m.labels);
  m.accuracy = ops::Mean(scope.WithOpName("accuracy"), ops::Cast(scope, correct, DT_FLOAT), {0});

  ASSIGN_OR_RETURN(m.global_step, GetOrCreateGlobalStep(var_scope(scope, TensorShape(), DT_INT64)));
  // Adagrad updates the table's rows a step read, where they live; Adam would move
  // every row.
  if (o.model == ModelKind::kEmbedding) {
    m.optimizer = std::make_shared<AdagradOptimizer>(o.learning_rate > 0 ? o.learning_rate : 0.1);
  } else {
    m.optimizer = std::make_shared<AdamOptimizer>(o.learning_rate > 0 ? o.learning_rate : 0.001);
  }
  if (o.replicas_to_aggregate > 0) {
    m.sync_replicas = std::make_shared<SyncReplicasOptimizer>(
        m.optimizer.get(), o.replicas_to_aggregate,
        o.total_num_replicas > 0 ? o.total_num_replicas : o.replicas_to_aggregate);
    ASSIGN_OR_RETURN(m.train,
                     m.sync_replicas->Minimize(scope.WithOpName("train"), m.loss, m.global_step));
  } else {
    ASSIGN_OR_RETURN(m.train,
                     m.optimizer->Minimize(scope.WithOpName("train"), m.loss, &m.global_step));
  }
  m.init = GlobalVariablesInitializer(scope.WithOpName("init"));
  RETURN_IF_ERROR(scope.status());
  return m;
}

}  // namespace examples
}  // namespace overseer
