// Keeps the README's "Writing a trainer" snippet compiling and working: the function
// below is the snippet verbatim.
#include "client/graph/ops.h"
#include "client/graph/optimizers.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"

namespace readme {
using namespace overseer;  // NOLINT: as the README writes it.

absl::Status FitLine(const Tensor& xs, const Tensor& ys) {  // xs [n,1], ys [n,1]
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialShape({-1, 1}));
  Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT, PartialShape({-1, 1}));
  Variable w = MakeVariable(root.WithOpName("w"), Tensor(DT_FLOAT, TensorShape({1, 1})));
  Variable b = MakeVariable(root.WithOpName("b"), 0.0f);
  Output error = ops::Sub(root, ops::Add(root, ops::MatMul(root, x, w.value), b.value), y);
  Output loss = ops::Mean(root.WithOpName("loss"), ops::Square(root, error), {0, 1});
  GradientDescentOptimizer sgd(0.1);
  ASSIGN_OR_RETURN(Operation train, sgd.Minimize(root, loss));
  ASSIGN_OR_RETURN(auto session, ClientSession::Create(root));  // target "": in-process
  RETURN_IF_ERROR(session->Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr));
  std::vector<Tensor> out;
  for (int step = 0; step < 200; ++step) {
    RETURN_IF_ERROR(session->Run({{x, xs}, {y, ys}}, {loss}, {train}, &out));
  }
  // Not in the README: the fit is checked here.
  if (out[0].scalar<float>() > 1e-3f) return absl::InternalError("did not fit the line");
  return absl::OkStatus();
}

}  // namespace readme

TEST(ReadmeSnippetTest, FitsALine) {
  using overseer::Tensor;
  using overseer::TensorShape;
  // y = 2x + 1
  Tensor xs = Tensor::FromVector<float>({0, 1, 2, 3}, TensorShape({4, 1}));
  Tensor ys = Tensor::FromVector<float>({1, 3, 5, 7}, TensorShape({4, 1}));
  absl::Status s = readme::FitLine(xs, ys);
  EXPECT_TRUE(s.ok()) << s;
}
