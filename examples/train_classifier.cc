// Trains the example classifier in-process and reports its test accuracy.
//
//   train_classifier [--model=mlp|cnn|embedding] [--data_dir=DIR | --synthetic] [--steps=N] ...
//
// --model=cnn trains the convolutional network of TensorFlow's Fashion-MNIST tutorial
// (examples/classifier.h) instead of the MLP; it is far slower per step. --model=embedding
// trains the embedding model (pixels as categorical ids, a sharded table, Adagrad).
// Trains on Fashion-MNIST from Debian's dataset-fashion-mnist by default; --data_dir
// names another directory of the four MNIST-format IDX files (gzipped or not), and
// --synthetic a deterministic synthetic 10-class dataset of 28x28 images made in-process.
// Prints a progress line every --log_every steps and ends with
// "final accuracy: 0.xxxx". Exits 1 with a message on bad input or any error.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "client/session/client_session.h"
#include "core/process_settings.h"
#include "core/status_macros.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"

ABSL_FLAG(std::string, data_dir, overseer::examples::kFashionMnistDir,
          "directory holding the four MNIST or Fashion-MNIST IDX files, gzipped or not "
          "(default: Fashion-MNIST, from Debian's dataset-fashion-mnist)");
ABSL_FLAG(std::string, model, "mlp",
          "mlp (two-layer perceptron), cnn (TensorFlow's Fashion-MNIST convnet) or embedding "
          "(pixels as categorical ids in a sharded embedding table, updated sparsely)");
ABSL_FLAG(bool, synthetic, false, "train on synthetic data instead (fast, trivially separable)");
ABSL_FLAG(int64_t, steps, 1500, "training steps");
ABSL_FLAG(int64_t, batch_size, 100, "examples per training step");
ABSL_FLAG(int64_t, hidden_units, 128, "units of the hidden layer");
ABSL_FLAG(double, learning_rate, 0,
          "learning rate; 0: the model's default (Adam's 0.001; the embedding model's Adagrad "
          "0.1)");
ABSL_FLAG(int64_t, log_every, 100, "print a progress line every this many steps");
ABSL_FLAG(int64_t, eval_every, 0,
          "also print the test accuracy every this many steps (0: only at the end)");
ABSL_FLAG(int64_t, seed, 1, "seed of the weight initialisers and the synthetic data");
ABSL_FLAG(int64_t, num_train, 20000, "synthetic training examples");
ABSL_FLAG(int64_t, num_test, 5000, "synthetic test examples");

namespace overseer {
namespace examples {
namespace {

absl::Status CheckFlags() {
  if (absl::GetFlag(FLAGS_steps) < 1 || absl::GetFlag(FLAGS_batch_size) < 1 ||
      absl::GetFlag(FLAGS_hidden_units) < 1 || absl::GetFlag(FLAGS_log_every) < 1 ||
      absl::GetFlag(FLAGS_num_train) < 1 || absl::GetFlag(FLAGS_num_test) < 1 ||
      absl::GetFlag(FLAGS_eval_every) < 0) {
    return absl::InvalidArgumentError(
        "--steps, --batch_size, --hidden_units, --log_every, --num_train and --num_test "
        "must be positive, --eval_every not negative");
  }
  RETURN_IF_ERROR(ModelKindFromName(absl::GetFlag(FLAGS_model)).status());
  if (!(absl::GetFlag(FLAGS_learning_rate) >= 0)) {
    return absl::InvalidArgumentError("--learning_rate must be positive (or 0, the default)");
  }
  return absl::OkStatus();
}

// Accuracy over the whole of `data`, in batches.
absl::StatusOr<double> Evaluate(ClientSession& session, const Classifier& model,
                                const Dataset& data) {
  constexpr int64_t kBatch = 1000;
  double correct = 0;
  for (int64_t start = 0; start < data.num_examples; start += kBatch) {
    const int64_t n = std::min(kBatch, data.num_examples - start);
    Tensor x, y;
    data.Batch(start, n, &x, &y);
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session.Run({{model.images, x}, {model.labels, y}}, {model.accuracy}, &out));
    correct += out[0].scalar<float>() * static_cast<double>(n);
  }
  return correct / static_cast<double>(data.num_examples);
}

absl::Status Train() {
  RETURN_IF_ERROR(CheckFlags());
  DataChoice choice;
  choice.synthetic = absl::GetFlag(FLAGS_synthetic);
  choice.data_dir = absl::GetFlag(FLAGS_data_dir);
  choice.num_train = absl::GetFlag(FLAGS_num_train);
  choice.num_test = absl::GetFlag(FLAGS_num_test);
  choice.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed));
  std::string description;
  ASSIGN_OR_RETURN(TrainTest data, LoadData(choice, &description));
  std::printf("%s\n", description.c_str());

  Scope root = Scope::NewRootScope();
  ClassifierOptions options;
  options.num_features = data.train.num_features;
  options.hidden_units = absl::GetFlag(FLAGS_hidden_units);
  options.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  options.seed = absl::GetFlag(FLAGS_seed);
  ASSIGN_OR_RETURN(options.model, ModelKindFromName(absl::GetFlag(FLAGS_model)));
  ASSIGN_OR_RETURN(Classifier model, BuildClassifier(root, options));
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session, ClientSession::Create(root));
  RETURN_IF_ERROR(session->Run({}, {}, {model.init}, nullptr));

  const int64_t steps = absl::GetFlag(FLAGS_steps);
  const int64_t batch = absl::GetFlag(FLAGS_batch_size);
  const int64_t log_every = absl::GetFlag(FLAGS_log_every);
  auto window_start = std::chrono::steady_clock::now();
  int64_t window_steps = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    Tensor x, y;
    data.train.Batch((step - 1) * batch, batch, &x, &y);
    std::vector<FeedPair> feeds = {{model.images, x}, {model.labels, y}};
    if (model.keep_prob.valid())
      feeds.emplace_back(model.keep_prob, Tensor::Scalar(kTrainKeepProb));
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session->Run(feeds, {model.loss, model.accuracy}, {model.train}, &out));
    ++window_steps;
    if (step % log_every == 0 || step == steps) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - window_start).count();
      std::printf("step %6lld  loss %.4f  batch accuracy %.4f  %.1f steps/s\n",
                  static_cast<long long>(step), out[0].scalar<float>(), out[1].scalar<float>(),
                  secs > 0 ? window_steps / secs : 0.0);
      std::fflush(stdout);
      window_start = now;
      window_steps = 0;
    }
    const int64_t eval_every = absl::GetFlag(FLAGS_eval_every);
    if (eval_every > 0 && step % eval_every == 0 && step < steps) {
      ASSIGN_OR_RETURN(double accuracy, Evaluate(*session, model, data.test));
      std::printf("step %6lld  test accuracy %.4f\n", static_cast<long long>(step), accuracy);
      std::fflush(stdout);
      window_start = std::chrono::steady_clock::now();  // The evaluation is not a step.
    }
  }
  ASSIGN_OR_RETURN(double accuracy, Evaluate(*session, model, data.test));
  std::printf("final accuracy: %.4f\n", accuracy);
  return session->Close();
}

}  // namespace
}  // namespace examples
}  // namespace overseer

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Trains a softmax classifier (a two-layer MLP, with --model=cnn TensorFlow's\n"
      "Fashion-MNIST convnet, with --model=embedding a sharded embedding model), in-process.\n"
      "Usage: train_classifier [--model=mlp|cnn|embedding] [--data_dir=DIR | --synthetic] "
      "[--steps=N] ...");
  absl::ParseCommandLine(argc, argv);
  overseer::ApplyProcessSettings();
  absl::Status status = overseer::examples::Train();
  if (!status.ok()) {
    std::fprintf(stderr, "train_classifier: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
