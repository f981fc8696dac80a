#include "core/op_kernel.h"

#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace {

struct KernelRegistry {
  absl::Mutex mu;
  std::map<std::string, KernelFactory> factories ABSL_GUARDED_BY(mu);
};

KernelRegistry* GlobalKernelRegistry() {
  static KernelRegistry* registry = new KernelRegistry();
  return registry;
}

std::vector<DataType> InputTypes(OpKernelConstruction* c) { return c->input_types(); }

}  // namespace

OpKernel::OpKernel(OpKernelConstruction* c)
    : def_(c->def()),
      input_types_(InputTypes(c)),
      output_types_(c->output_types()),
      is_stateful_(c->op_def().is_stateful) {}

OpKernelContext::OpKernelContext(const Params& params)
    : params_(params), outputs_(params.kernel->num_outputs()) {
  snapshots_.resize(params.inputs->size());
}

absl::StatusOr<Tensor> OpKernelContext::input_value(int i) {
  const TensorValue& v = (*params_.inputs)[i];
  if (!v.is_ref()) return v.tensor;
  absl::MutexLock lock(v.ref->mu());
  if (!v.ref->is_initialized()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Attempting to use uninitialized value ", kernel().def().input(i)));
  }
  return *v.ref->tensor();
}

const Tensor& OpKernelContext::input(int i) {
  const TensorValue& v = (*params_.inputs)[i];
  if (!v.is_ref()) return v.tensor;
  absl::MutexLock lock(v.ref->mu());
  snapshots_[i] = *v.ref->tensor();
  return snapshots_[i];
}

void OpKernelContext::set_output(int i, Tensor t) {
  outputs_[i].tensor = std::move(t);
  outputs_[i].ref.reset();
}

absl::StatusOr<Tensor*> OpKernelContext::allocate_output(int i, const TensorShape& shape) {
  return allocate_output(i, RemoveRefType(params_.kernel->output_type(i)), shape);
}

absl::StatusOr<Tensor*> OpKernelContext::allocate_output(int i, DataType dtype,
                                                         const TensorShape& shape) {
  ASSIGN_OR_RETURN(outputs_[i].tensor, Tensor::Allocate(dtype, shape));
  outputs_[i].ref.reset();
  return &outputs_[i].tensor;
}

void OpKernelContext::set_output_ref(int i, std::shared_ptr<Var> var) {
  outputs_[i].tensor = Tensor();
  outputs_[i].ref = std::move(var);
}

const Eigen::ThreadPoolDevice& OpKernelContext::eigen_device() const {
  return params_.eigen_device ? *params_.eigen_device : DefaultEigenDevice();
}

const Eigen::ThreadPoolDevice& DefaultEigenDevice() {
  static Eigen::ThreadPool* pool =
      new Eigen::ThreadPool(std::max(1u, std::thread::hardware_concurrency()));
  static Eigen::ThreadPoolDevice* device = new Eigen::ThreadPoolDevice(pool, pool->NumThreads());
  return *device;
}

void RegisterKernelFactory(const std::string& op_name, KernelFactory factory) {
  KernelRegistry* r = GlobalKernelRegistry();
  absl::MutexLock lock(&r->mu);
  CHECK(r->factories.count(op_name) == 0) << "kernel for op " << op_name << " registered twice";
  r->factories[op_name] = std::move(factory);
}

bool HasKernel(const std::string& op_name) {
  KernelRegistry* r = GlobalKernelRegistry();
  absl::MutexLock lock(&r->mu);
  return r->factories.count(op_name) > 0;
}

absl::StatusOr<std::unique_ptr<OpKernel>> CreateOpKernel(const NodeDef& def) {
  const std::string prefix = absl::StrCat("node '", def.name(), "' (op '", def.op(), "'): ");
  auto op_def = OpRegistry::Global()->Lookup(def.op());
  if (!op_def.ok()) return Annotate(op_def.status(), prefix);
  KernelFactory factory;
  {
    KernelRegistry* r = GlobalKernelRegistry();
    absl::MutexLock lock(&r->mu);
    auto it = r->factories.find(def.op());
    if (it == r->factories.end()) {
      return absl::NotFoundError(absl::StrCat(prefix, "no CPU kernel is registered"));
    }
    factory = it->second;
  }
  NodeDef resolved = def;
  RETURN_IF_ERROR(AddDefaultsAndValidateAttrs(**op_def, &resolved));
  std::vector<DataType> inputs, outputs;
  RETURN_IF_ERROR(Annotate(InOutTypesForNode(resolved, **op_def, &inputs, &outputs), prefix));
  OpKernelConstruction construction(resolved, **op_def, std::move(inputs), std::move(outputs));
  std::unique_ptr<OpKernel> kernel = factory(&construction);
  RETURN_IF_ERROR(Annotate(kernel->Init(&construction), prefix));
  return kernel;
}

}  // namespace overseer
