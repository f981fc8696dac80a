#include "examples/classifier.h"

#include "client/session/client_session.h"
#include "core/resource_mgr.h"
#include "examples/mnist_data.h"
#include "gtest/gtest.h"

namespace overseer {
namespace examples {
namespace {

// The model reaches high accuracy on the synthetic data in a fixed number of steps.
TEST(ClassifierTest, ConvergesOnSyntheticData) {
  TrainTest data = MakeSynthetic(4000, 1000, 7);
  Scope root = Scope::NewRootScope();
  ClassifierOptions options;
  options.hidden_units = 64;
  auto model = BuildClassifier(root, options);
  ASSERT_TRUE(model.ok()) << model.status();
  auto session = ClientSession::Create(root);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Run({}, {}, {model->init}, nullptr).ok());

  std::vector<Tensor> out;
  float first_loss = 0;
  for (int step = 0; step < 300; ++step) {
    Tensor x, y;
    data.train.Batch(step * 50, 50, &x, &y);
    auto s = (*session)->Run({{model->images, x}, {model->labels, y}}, {model->loss},
                             {model->train}, &out);
    ASSERT_TRUE(s.ok()) << s;
    if (step == 0) first_loss = out[0].scalar<float>();
  }
  EXPECT_LT(out[0].scalar<float>(), first_loss / 4);

  Tensor x, y;
  data.test.Batch(0, data.test.num_examples, &x, &y);
  ASSERT_TRUE((*session)
                  ->Run({{model->images, x}, {model->labels, y}},
                        {model->accuracy, model->global_step.value}, &out)
                  .ok());
  EXPECT_GE(out[0].scalar<float>(), 0.97f);
  EXPECT_EQ(out[1].scalar<int64_t>(), 300);
}

// The CNN trains (TensorFlow's tutorial network, here on the synthetic data): the loss
// falls, dropout is on in training (keep_prob fed) and off by default for evaluation.
TEST(ClassifierTest, ConvolutionalModelTrains) {
  TrainTest data = MakeSynthetic(600, 200, 3);
  Scope root = Scope::NewRootScope();
  ClassifierOptions options;
  options.model = ModelKind::kCnn;
  auto model = BuildClassifier(root, options);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(model->keep_prob.valid());
  ResourceMgr resources;
  SessionOptions session_options;
  session_options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, session_options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Run({}, {}, {model->init}, nullptr).ok());
  std::vector<Tensor> out;
  float first_loss = 0;
  for (int step = 0; step < 30; ++step) {
    Tensor x, y;
    data.train.Batch(step * 20, 20, &x, &y);
    auto s = (*session)->Run({{model->images, x},
                              {model->labels, y},
                              {model->keep_prob, Tensor::Scalar(kTrainKeepProb)}},
                             {model->loss}, {model->train}, &out);
    ASSERT_TRUE(s.ok()) << s;
    if (step == 0) first_loss = out[0].scalar<float>();
  }
  EXPECT_LT(out[0].scalar<float>(), first_loss / 2);
  Tensor x, y;
  data.test.Batch(0, data.test.num_examples, &x, &y);
  ASSERT_TRUE(
      (*session)->Run({{model->images, x}, {model->labels, y}}, {model->accuracy}, &out).ok());
  EXPECT_GE(out[0].scalar<float>(), 0.9f);

  ClassifierOptions wrong = options;
  wrong.num_features = 100;
  Scope other = Scope::NewRootScope();
  EXPECT_EQ(BuildClassifier(other, wrong).status().code(), absl::StatusCode::kInvalidArgument);
}

// The embedding model trains on the synthetic data, its table split into the shards
// asked for, with sparse gradients; bad options and model names are named.
TEST(ClassifierTest, EmbeddingModelTrainsWithShardsAndSparseGradients) {
  TrainTest data = MakeSynthetic(4000, 1000, 5);
  Scope root = Scope::NewRootScope();
  ClassifierOptions options;
  options.model = ModelKind::kEmbedding;
  options.embedding_shards = 3;
  auto model = BuildClassifier(root, options);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->embedding_shards.size(), 3u);
  // 784 x 16 ids split by id modulo 3: 4182, 4181 and 4181 rows.
  EXPECT_EQ(model->embedding_shards[0].ref.shape(), PartialShape({4182, 32}));
  EXPECT_EQ(model->embedding_shards[2].ref.shape(), PartialShape({4181, 32}));
  ResourceMgr resources;
  SessionOptions session_options;
  session_options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, session_options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Run({}, {}, {model->init}, nullptr).ok());
  std::vector<Tensor> out;
  for (int step = 0; step < 500; ++step) {
    Tensor x, y;
    data.train.Batch(step * 50, 50, &x, &y);
    auto s = (*session)->Run({{model->images, x}, {model->labels, y}}, {}, {model->train}, &out);
    ASSERT_TRUE(s.ok()) << s;
  }
  Tensor x, y;
  data.test.Batch(0, data.test.num_examples, &x, &y);
  ASSERT_TRUE(
      (*session)->Run({{model->images, x}, {model->labels, y}}, {model->accuracy}, &out).ok());
  EXPECT_GE(out[0].scalar<float>(), 0.9f);

  ClassifierOptions wrong = options;
  wrong.embedding_levels = 1;
  Scope other = Scope::NewRootScope();
  EXPECT_EQ(BuildClassifier(other, wrong).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelKindFromName("embedding").value(), ModelKind::kEmbedding);
  EXPECT_EQ(ModelKindFromName("rnn").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ClassifierTest, WrongFeedShapeIsAClearError) {
  Scope root = Scope::NewRootScope();
  auto model = BuildClassifier(root, ClassifierOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  // Variables live in a process-wide container by default; this test's model has
  // other shapes than the previous test's, so it gets a container of its own.
  ResourceMgr resources;
  SessionOptions options;
  options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok());
  auto init = (*session)->Run({}, {}, {model->init}, nullptr);
  ASSERT_TRUE(init.ok()) << init;
  Tensor x(DT_FLOAT, TensorShape({2, 100}));
  Tensor y(DT_INT64, TensorShape({2}));
  std::vector<Tensor> out;
  auto s = (*session)->Run({{model->images, x}, {model->labels, y}}, {model->loss}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("images"), std::string::npos) << s;
}

}  // namespace
}  // namespace examples
}  // namespace overseer
