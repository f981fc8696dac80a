#include <thread>

#include "core/cancellation.h"
#include "core/op_kernel.h"
#include "core/resource_mgr.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

REGISTER_OP("FrameworkTestDouble").Input("x: float").Output("y: float");

class DoubleOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    y->flat<float>().device(ctx->eigen_device()) = x.flat<float>() * 2.0f;
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(DoubleOp, "FrameworkTestDouble");

TEST(OpKernelTest, CreateAndComputeWithRefInput) {
  NodeDef def;
  def.set_name("double");
  def.set_op("FrameworkTestDouble");
  def.add_input("v");
  auto kernel = CreateOpKernel(def);
  ASSERT_TRUE(kernel.ok()) << kernel.status();

  auto var = std::make_shared<Var>(DT_FLOAT);
  std::vector<TensorValue> inputs(1);
  inputs[0].ref = var;
  OpKernelContext::Params params;
  params.kernel = kernel->get();
  params.inputs = &inputs;
  {
    OpKernelContext ctx(params);
    auto v = ctx.input_value(0);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(v.status().message().find("uninitialized value v"), std::string::npos);
  }
  {
    absl::MutexLock lock(var->mu());
    *var->tensor() = Tensor::FromVector<float>({1, 2});
  }
  OpKernelContext ctx(params);
  ASSERT_TRUE((*kernel)->Compute(&ctx).ok());
  EXPECT_TRUE(ctx.mutable_outputs()->at(0).tensor.Equals(Tensor::FromVector<float>({2, 4})));
}

TEST(OpKernelTest, MissingKernelAndUnknownOpNameTheNode) {
  NodeDef def;
  def.set_name("mystery");
  def.set_op("NoSuchOpAnywhere");
  auto k = CreateOpKernel(def);
  EXPECT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("mystery"), std::string::npos);
}

TEST(VarTest, PrepareForUpdateIsCopyOnWrite) {
  Var var(DT_FLOAT);
  absl::MutexLock lock(var.mu());
  *var.tensor() = Tensor::FromVector<float>({1});
  Tensor reader = *var.tensor();
  var.PrepareForUpdate();
  var.tensor()->flat<float>()(0) = 5;
  EXPECT_EQ(reader.flat<float>()(0), 1);
  EXPECT_EQ(var.tensor()->flat<float>()(0), 5);
}

TEST(ResourceMgrTest, SharedLookupTypeCheckAndCleanup) {
  ResourceMgr mgr;
  auto create = []() -> absl::StatusOr<std::shared_ptr<Var>> {
    return std::make_shared<Var>(DT_FLOAT);
  };
  auto a = mgr.LookupOrCreate<Var>("c", "w", create);
  auto b = mgr.LookupOrCreate<Var>("c", "w", create);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_TRUE(mgr.Lookup<Var>("c", "w").ok());
  EXPECT_EQ(mgr.Lookup<Var>("c", "nope").status().code(), absl::StatusCode::kNotFound);
  mgr.Cleanup("c");
  EXPECT_EQ(mgr.Lookup<Var>("c", "w").status().code(), absl::StatusCode::kNotFound);
  auto failed = mgr.LookupOrCreate<Var>("c", "x", []() -> absl::StatusOr<std::shared_ptr<Var>> {
    return absl::InvalidArgumentError("no");
  });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(mgr.Lookup<Var>("c", "x").status().code(), absl::StatusCode::kNotFound);
}

TEST(CancellationTest, CallbacksRunOnceAndLateRegistrationRefused) {
  CancellationManager cm;
  int calls = 0;
  auto t1 = cm.RegisterCallback([&] { ++calls; });
  auto t2 = cm.RegisterCallback([&] { ++calls; });
  EXPECT_TRUE(cm.DeregisterCallback(t2));
  std::thread canceller([&] { cm.StartCancel(absl::DeadlineExceededError("late")); });
  canceller.join();
  cm.StartCancel(absl::CancelledError("second"));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(cm.IsCancelled());
  EXPECT_EQ(cm.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cm.RegisterCallback([] {}), CancellationManager::kInvalidToken);
  EXPECT_FALSE(cm.DeregisterCallback(t1));
}

}  // namespace
}  // namespace overseer
