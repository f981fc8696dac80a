#ifndef OVERSEER_CORE_KERNELS_TESTING_KERNEL_TEST_UTIL_H_
#define OVERSEER_CORE_KERNELS_TESTING_KERNEL_TEST_UTIL_H_

// Running one kernel in a test without a graph or an executor:
//
//   test::KernelRunner add("Add");
//   add.Attr("T", DT_FLOAT);
//   auto out = add.Run({test::Value(a), test::Value(b)});   // StatusOr<vector<Tensor>>
//   test::ExpectTensorEqual<float>(out->at(0), expected);
//
// The runner adds the op's default attrs, creates the kernel once with CreateOpKernel and
// runs Compute with its own ResourceMgr and CancellationManager (replaceable), the
// default Eigen device, the real clock and no deadline (both replaceable).

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/clock.h"
#include "core/node_def_util.h"
#include "core/op_kernel.h"
#include "core/resource_mgr.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "proto/node_def.pb.h"

namespace overseer {
namespace test {

// An input given by value.
inline TensorValue Value(Tensor t) {
  TensorValue v;
  v.tensor = std::move(t);
  return v;
}
// An input that refers to a variable (for Ref(T) inputs).
inline TensorValue Ref(std::shared_ptr<Var> var) {
  TensorValue v;
  v.ref = std::move(var);
  return v;
}
// A variable of `value`'s dtype holding `value`; uninitialised when `value` is not.
std::shared_ptr<Var> MakeVar(DataType dtype, const Tensor& value = Tensor());
// The variable's current value (an uninitialised Tensor if it has none).
Tensor ReadVar(Var* var);

// Builds and runs one kernel. Configure (Attr, Input, set_*) before the first Run or
// Init; afterwards Run is thread-safe, so two threads may run one stateful kernel.
class KernelRunner {
 public:
  explicit KernelRunner(const std::string& op, const std::string& node_name = "node");
  // Starts from a complete NodeDef (attrs and inputs as given).
  explicit KernelRunner(const NodeDef& def);
  KernelRunner(const KernelRunner&) = delete;
  KernelRunner& operator=(const KernelRunner&) = delete;

  template <typename T>
  KernelRunner& Attr(absl::string_view name, const T& value) {
    SetNodeAttr(&def_, name, value);
    return *this;
  }
  KernelRunner& Attr(absl::string_view name, const std::vector<int>& value);
  KernelRunner& Attr(absl::string_view name, const std::vector<std::string>& value);
  // Names the node's inputs; by default they are "in_0", "in_1", ... as many as the op
  // declares after attrs are known.
  KernelRunner& Input(const std::string& name);

  // Shares `mgr` (not owned; must outlive the runner) instead of the runner's own.
  void set_resource_mgr(ResourceMgr* mgr) { resource_mgr_ = mgr; }
  // Runs with `cm` (not owned) instead of the runner's own, which is never cancelled.
  void set_cancellation(CancellationManager* cm) { cancellation_ = cm; }
  void set_clock(Clock* clock) { clock_ = clock; }
  void set_deadline(absl::Time deadline) { deadline_ = deadline; }
  void set_step_id(int64_t step_id) { step_id_ = step_id; }
  // Hands `rendezvous` (not owned) to the kernel, for _Send/_Recv.
  void set_rendezvous(Rendezvous* rendezvous) { rendezvous_ = rendezvous; }

  ResourceMgr* resource_mgr() const { return resource_mgr_; }
  CancellationManager* cancellation() const { return cancellation_; }
  const NodeDef& def() const { return def_; }

  // Adds defaults and creates the kernel; the error of CreateOpKernel if it fails.
  // Idempotent: later calls return the first result.
  absl::Status Init();
  // The kernel, or nullptr before a successful Init.
  OpKernel* kernel();

  // Runs Compute once (Init first if needed). Returns the outputs with ref outputs
  // replaced by the variable's current value, or the kernel's error.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<TensorValue>& inputs);
  // Like Run but returns the outputs as the kernel set them (refs stay refs).
  absl::StatusOr<std::vector<TensorValue>> RunRaw(const std::vector<TensorValue>& inputs);

 private:
  NodeDef def_;
  std::unique_ptr<ResourceMgr> own_resource_mgr_;
  CancellationManager own_cancellation_;
  ResourceMgr* resource_mgr_;
  CancellationManager* cancellation_;
  Clock* clock_ = Clock::Real();  // Tests of deadlines set a fake one.
  absl::Time deadline_ = absl::InfiniteFuture();
  int64_t step_id_ = 1;
  Rendezvous* rendezvous_ = nullptr;

  absl::Mutex mu_;
  bool init_done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status init_status_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<OpKernel> kernel_ ABSL_GUARDED_BY(mu_);
};

// Builds, inits and runs a kernel for `def` once with a fresh ResourceMgr.
absl::StatusOr<std::vector<Tensor>> RunKernel(const NodeDef& def,
                                              const std::vector<TensorValue>& inputs);

// Shorthands for tensors in tests.
template <typename T>
Tensor AsTensor(const std::vector<T>& values, const TensorShape& shape) {
  return Tensor::FromVector<T>(values, shape);
}
template <typename T>
Tensor AsTensor(const std::vector<T>& values) {
  return Tensor::FromVector<T>(values);
}
template <typename T>
Tensor AsScalar(T value) {
  return Tensor::Scalar<T>(std::move(value));
}

// Gtest checks: same dtype and shape, then equal (or within `tol`, absolute plus
// relative) elements; failures name the first differing index and both tensors.
void ExpectTensorEqual(const Tensor& actual, const Tensor& expected);
void ExpectTensorNear(const Tensor& actual, const Tensor& expected, double tol = 1e-5);
// Typed spellings kept for readability at call sites; same checks.
template <typename T>
void ExpectTensorEqual(const Tensor& actual, const Tensor& expected) {
  ExpectTensorEqual(actual, expected);
}
template <typename T>
void ExpectTensorNear(const Tensor& actual, const Tensor& expected, double tol = 1e-5) {
  ExpectTensorNear(actual, expected, tol);
}

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_TESTING_KERNEL_TEST_UTIL_H_
