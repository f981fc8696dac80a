#ifndef OVERSEER_CORE_OP_KERNEL_H_
#define OVERSEER_CORE_OP_KERNEL_H_

// CPU kernels. One class per op handles every dtype (dispatching on the dtype at run
// time), registered with REGISTER_KERNEL(ClassName, "OpName").
//
//   class NegOp : public OpKernel {
//    public:
//     using OpKernel::OpKernel;
//     absl::Status Compute(OpKernelContext* ctx) override { ... }
//   };
//   REGISTER_KERNEL(NegOp, "Neg");
//
// Errors a kernel returns are prefixed by the executor with the node name and op.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/cancellation.h"
#include "core/clock.h"
#include "core/node_def_util.h"
#include "core/op_registry.h"
#include "core/resource_mgr.h"
#include "core/tensor.h"
#include "proto/node_def.pb.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace overseer {

// What a kernel's Init sees. Not thread-safe.
class OpKernelConstruction {
 public:
  OpKernelConstruction(const NodeDef& def, const OpDef& op_def, std::vector<DataType> input_types,
                       std::vector<DataType> output_types)
      : def_(def),
        op_def_(op_def),
        input_types_(std::move(input_types)),
        output_types_(std::move(output_types)) {}

  const NodeDef& def() const { return def_; }
  const OpDef& op_def() const { return op_def_; }
  const std::vector<DataType>& input_types() const { return input_types_; }
  const std::vector<DataType>& output_types() const { return output_types_; }

  template <typename T>
  absl::Status GetAttr(absl::string_view name, T* value) const {
    return GetNodeAttr(def_, name, value);
  }

 private:
  const NodeDef& def_;
  const OpDef& op_def_;
  std::vector<DataType> input_types_;
  std::vector<DataType> output_types_;
};

class OpKernelContext;
struct TensorValue;
class Rendezvous;

// Base of every kernel. Compute may run concurrently from several steps (and, for
// stateful ops shared by a session, from several executors), so kernels keep
// per-step state on the stack and guard any member state.
class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* c);
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  // Reads attrs and checks them. Called once after construction.
  virtual absl::Status Init(OpKernelConstruction* /*c*/) { return absl::OkStatus(); }
  // Computes the outputs from the inputs; every output must be set on success.
  virtual absl::Status Compute(OpKernelContext* ctx) = 0;
  // What an executor calls for a kernel whose IsAsync() is true, instead of Compute:
  // computes, then calls `done` once with Compute's status, either on this thread
  // before returning or later on another thread (the one a reply arrives on, which
  // `done` does not block). `ctx` stays valid until `done` runs. The default runs
  // Compute here.
  using DoneCallback = std::function<void(absl::Status)>;
  virtual void ComputeAsync(OpKernelContext* ctx, DoneCallback done) { done(Compute(ctx)); }
  // True if ComputeAsync may finish later, on another thread: a kernel that waits for
  // a remote reply then holds no thread while it waits.
  virtual bool IsAsync() const { return false; }

  const NodeDef& def() const { return def_; }
  const std::string& name() const { return def_.name(); }
  const std::string& type_string() const { return def_.op(); }
  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  bool IsStateful() const { return is_stateful_; }
  // True if Compute may wait for something that other work provides: a tensor from
  // another task, room or elements in a queue, a file or a remote call. A worker runs a
  // partition with no such kernel on the thread that read its RunGraph call (when the
  // partition is also quick), so a kernel that waits must say so here, or it could
  // stall every RunGraph of its worker (worker/rpc/grpc_worker_service.h).
  virtual bool MayWait() const { return false; }
  // False for a kernel whose Compute costs next to nothing whatever its inputs (a
  // constant, a variable's reference, forwarding a tensor): the executor runs it on the
  // thread that made it ready instead of handing it to another thread.
  virtual bool IsExpensive() const { return true; }
  // True for a kernel whose Compute costs about as much as a pass over ElementsTouched
  // elements (element-wise arithmetic, AddN): cheap when those are few, so the
  // executor then runs it on the thread that made it ready, as if IsExpensive were
  // false (Executor::kInlineElements).
  virtual bool CostFollowsElements() const { return false; }
  // With CostFollowsElements: how many elements Compute reads or writes, at most, for
  // these `inputs` (all values, none a reference), which it has not checked yet.
  virtual int64_t ElementsTouched(absl::Span<const TensorValue> /*inputs*/) const { return -1; }

 private:
  const NodeDef def_;
  const std::vector<DataType> input_types_;
  const std::vector<DataType> output_types_;
  const bool is_stateful_;
};

// One input or output value: a tensor, or a reference to a variable (ref dtypes).
struct TensorValue {
  Tensor tensor;
  std::shared_ptr<Var> ref;  // Set for ref outputs; `tensor` is then unset.
  bool is_ref() const { return ref != nullptr; }
};

// What a kernel's Compute sees. Not thread-safe; one per kernel invocation.
class OpKernelContext {
 public:
  struct Params {
    const OpKernel* kernel = nullptr;
    // Flattened inputs (list args expanded). Ref inputs carry `ref`.
    const std::vector<TensorValue>* inputs = nullptr;
    int64_t step_id = 0;
    ResourceMgr* resource_mgr = nullptr;
    CancellationManager* cancellation = nullptr;
    const Eigen::ThreadPoolDevice* eigen_device = nullptr;
    Clock* clock = nullptr;
    absl::Time deadline = absl::InfiniteFuture();
    // Where _Send/_Recv kernels exchange tensors (core/rendezvous.h); null outside a
    // worker step or a session that gives one.
    Rendezvous* rendezvous = nullptr;
  };

  explicit OpKernelContext(const Params& params);

  const OpKernel& kernel() const { return *params_.kernel; }
  int num_inputs() const { return static_cast<int>(params_.inputs->size()); }
  // Input i's value. For a ref input: the variable's current value, read under its
  // lock (FAILED_PRECONDITION via input_value() if uninitialised).
  const Tensor& input(int i);
  // Like input(i) but FAILED_PRECONDITION "Attempting to use uninitialized value
  // <var>" for an uninitialised ref input.
  absl::StatusOr<Tensor> input_value(int i);
  bool input_is_ref(int i) const { return (*params_.inputs)[i].is_ref(); }
  // The variable behind ref input i. Precondition: input_is_ref(i).
  Var* input_ref(int i) const { return (*params_.inputs)[i].ref.get(); }
  std::shared_ptr<Var> input_ref_shared(int i) const { return (*params_.inputs)[i].ref; }

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  void set_output(int i, Tensor t);
  // Allocates output i, zero-filled, with its declared dtype and `shape`. Checked
  // (Tensor::Allocate): a shape too large for a tensor, or for the process's memory
  // budget, is INVALID_ARGUMENT or RESOURCE_EXHAUSTED, which the executor prefixes with
  // the node's name; the kernel returns it.
  absl::StatusOr<Tensor*> allocate_output(int i, const TensorShape& shape);
  // Allocates output i with `dtype` (for ops whose output type is decided late).
  absl::StatusOr<Tensor*> allocate_output(int i, DataType dtype, const TensorShape& shape);
  void set_output_ref(int i, std::shared_ptr<Var> var);
  std::vector<TensorValue>* mutable_outputs() { return &outputs_; }

  int64_t step_id() const { return params_.step_id; }
  ResourceMgr* resource_mgr() const { return params_.resource_mgr; }
  CancellationManager* cancellation() const { return params_.cancellation; }
  // Never null: the process's intra-op Eigen device when the caller gave none.
  const Eigen::ThreadPoolDevice& eigen_device() const;
  // The step's clock (ExecutorRunArgs::clock): measures deadline(). Never null in an
  // executor's step; null for a kernel run by itself without one.
  Clock* clock() const { return params_.clock; }
  // When the step must end (RunOptions timeout); blocking kernels wait no longer.
  absl::Time deadline() const { return params_.deadline; }
  // The step's rendezvous, or null (not owned).
  Rendezvous* rendezvous() const { return params_.rendezvous; }

 private:
  Params params_;
  std::vector<Tensor> snapshots_;  // Values read from ref inputs.
  std::vector<TensorValue> outputs_;
};

// The process-wide intra-op device (one thread per core). Never null.
const Eigen::ThreadPoolDevice& DefaultEigenDevice();

// The kernel registry. Thread-safe.
using KernelFactory = std::function<std::unique_ptr<OpKernel>(OpKernelConstruction*)>;
void RegisterKernelFactory(const std::string& op_name, KernelFactory factory);
bool HasKernel(const std::string& op_name);

// Builds and initialises the kernel for `def` (attrs validated, defaults added).
// NOT_FOUND "no kernel for op X" or the Init error, prefixed with the node name.
absl::StatusOr<std::unique_ptr<OpKernel>> CreateOpKernel(const NodeDef& def);

namespace internal {
struct KernelRegistrar {
  KernelRegistrar(const char* op_name, KernelFactory factory) {
    RegisterKernelFactory(op_name, std::move(factory));
  }
};
}  // namespace internal

#define REGISTER_KERNEL(cls, op_name) REGISTER_KERNEL_UNIQ_HELPER(__COUNTER__, cls, op_name)
#define REGISTER_KERNEL_UNIQ_HELPER(ctr, cls, op_name) REGISTER_KERNEL_UNIQ(ctr, cls, op_name)
#define REGISTER_KERNEL_UNIQ(ctr, cls, op_name)                                   \
  static ::overseer::internal::KernelRegistrar overseer_kernel_registrar_##ctr    \
      __attribute__((unused)) (op_name, [](::overseer::OpKernelConstruction* c) { \
        return std::unique_ptr<::overseer::OpKernel>(std::make_unique<cls>(c));   \
      })

}  // namespace overseer

#endif  // OVERSEER_CORE_OP_KERNEL_H_
