#include "core/kernels/testing/kernel_test_util.h"

#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace overseer {
namespace test {

std::shared_ptr<Var> MakeVar(DataType dtype, const Tensor& value) {
  auto var = std::make_shared<Var>(dtype);
  if (value.IsInitialized()) {
    absl::MutexLock lock(var->mu());
    *var->tensor() = value;
  }
  return var;
}

Tensor ReadVar(Var* var) {
  absl::MutexLock lock(var->mu());
  return *var->tensor();
}

KernelRunner::KernelRunner(const std::string& op, const std::string& node_name)
    : own_resource_mgr_(std::make_unique<ResourceMgr>()),
      resource_mgr_(own_resource_mgr_.get()),
      cancellation_(&own_cancellation_) {
  def_.set_op(op);
  def_.set_name(node_name);
}

KernelRunner::KernelRunner(const NodeDef& def) : KernelRunner(def.op(), def.name()) { def_ = def; }

KernelRunner& KernelRunner::Attr(absl::string_view name, const std::vector<int>& value) {
  return Attr(name, std::vector<int64_t>(value.begin(), value.end()));
}

KernelRunner& KernelRunner::Attr(absl::string_view name, const std::vector<std::string>& value) {
  AttrValue attr;
  auto* list = attr.mutable_list();
  for (const auto& s : value) list->add_s(s);
  (*def_.mutable_attr())[std::string(name)] = attr;
  return *this;
}

KernelRunner& KernelRunner::Input(const std::string& name) {
  def_.add_input(name);
  return *this;
}

absl::Status KernelRunner::Init() {
  absl::MutexLock lock(&mu_);
  if (init_done_) return init_status_;
  init_done_ = true;
  init_status_ = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    ASSIGN_OR_RETURN(const OpDef* op, OpRegistry::Global()->Lookup(def_.op()));
    RETURN_IF_ERROR(AddDefaultsAndValidateAttrs(*op, &def_));
    if (def_.input_size() == 0) {
      std::vector<DataType> in, out;
      RETURN_IF_ERROR(InOutTypesForNode(def_, *op, &in, &out));
      for (size_t i = 0; i < in.size(); ++i) def_.add_input(absl::StrCat("in_", i));
    }
    ASSIGN_OR_RETURN(kernel_, CreateOpKernel(def_));
    return absl::OkStatus();
  }();
  return init_status_;
}

OpKernel* KernelRunner::kernel() {
  absl::MutexLock lock(&mu_);
  return kernel_.get();
}

absl::StatusOr<std::vector<TensorValue>> KernelRunner::RunRaw(
    const std::vector<TensorValue>& inputs) {
  RETURN_IF_ERROR(Init());
  OpKernel* k = kernel();
  if (static_cast<int>(inputs.size()) != k->num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat("test gave ", inputs.size(), " inputs to ",
                                                   def_.op(), " which takes ", k->num_inputs()));
  }
  OpKernelContext::Params params;
  params.kernel = k;
  params.inputs = &inputs;
  params.step_id = step_id_;
  params.resource_mgr = resource_mgr_;
  params.cancellation = cancellation_;
  params.eigen_device = &DefaultEigenDevice();
  params.clock = clock_;
  params.deadline = deadline_;
  params.rendezvous = rendezvous_;
  OpKernelContext ctx(params);
  RETURN_IF_ERROR(k->Compute(&ctx));
  return *ctx.mutable_outputs();
}

absl::StatusOr<std::vector<Tensor>> KernelRunner::Run(const std::vector<TensorValue>& inputs) {
  ASSIGN_OR_RETURN(std::vector<TensorValue> raw, RunRaw(inputs));
  std::vector<Tensor> out;
  out.reserve(raw.size());
  for (auto& v : raw) out.push_back(v.is_ref() ? ReadVar(v.ref.get()) : std::move(v.tensor));
  return out;
}

absl::StatusOr<std::vector<Tensor>> RunKernel(const NodeDef& def,
                                              const std::vector<TensorValue>& inputs) {
  KernelRunner runner(def);
  return runner.Run(inputs);
}

namespace {

template <typename T>
double AsDouble(const T& v) {
  return static_cast<double>(v);
}

template <typename T>
bool ElementsEqual(const Tensor& a, const Tensor& b, int64_t* bad) {
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    if (!(x[i] == y[i])) {
      *bad = i;
      return false;
    }
  }
  return true;
}

template <typename T>
bool ElementsNear(const Tensor& a, const Tensor& b, double tol, int64_t* bad) {
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    const double u = AsDouble(x[i]), v = AsDouble(y[i]);
    if (std::isnan(u) && std::isnan(v)) continue;
    if (u == v) continue;  // Also equal infinities.
    if (!(std::fabs(u - v) <= tol + tol * std::fabs(v))) {
      *bad = i;
      return false;
    }
  }
  return true;
}

bool SameTypeAndShape(const Tensor& actual, const Tensor& expected) {
  EXPECT_TRUE(actual.IsInitialized()) << "actual tensor is uninitialised";
  if (!actual.IsInitialized()) return false;
  EXPECT_EQ(DataTypeString(actual.dtype()), DataTypeString(expected.dtype()));
  EXPECT_EQ(actual.shape().DebugString(), expected.shape().DebugString());
  return actual.dtype() == expected.dtype() && actual.shape() == expected.shape();
}

}  // namespace

void ExpectTensorEqual(const Tensor& actual, const Tensor& expected) {
  if (!SameTypeAndShape(actual, expected)) return;
  int64_t bad = -1;
  bool ok = false;
  switch (actual.dtype()) {
#define OVERSEER_EQ_CASE(T)                        \
  case DataTypeToEnum<T>::value:                   \
    ok = ElementsEqual<T>(actual, expected, &bad); \
    break;
    OVERSEER_FOR_ALL_TYPES(OVERSEER_EQ_CASE)
#undef OVERSEER_EQ_CASE
    default:
      ADD_FAILURE() << "unsupported dtype " << DataTypeString(actual.dtype());
      return;
  }
  EXPECT_TRUE(ok) << "first difference at flat index " << bad
                  << "\n  actual:   " << actual.DebugString(20)
                  << "\n  expected: " << expected.DebugString(20);
}

void ExpectTensorNear(const Tensor& actual, const Tensor& expected, double tol) {
  if (!SameTypeAndShape(actual, expected)) return;
  int64_t bad = -1;
  bool ok = false;
  switch (actual.dtype()) {
#define OVERSEER_NEAR_CASE(T)                          \
  case DataTypeToEnum<T>::value:                       \
    ok = ElementsNear<T>(actual, expected, tol, &bad); \
    break;
    OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_NEAR_CASE)
#undef OVERSEER_NEAR_CASE
    case DT_BOOL:
    case DT_STRING:
      ExpectTensorEqual(actual, expected);
      return;
    default:
      ADD_FAILURE() << "unsupported dtype " << DataTypeString(actual.dtype());
      return;
  }
  EXPECT_TRUE(ok) << "first difference beyond " << tol << " at flat index " << bad
                  << "\n  actual:   " << actual.DebugString(20)
                  << "\n  expected: " << expected.DebugString(20);
}

}  // namespace test
}  // namespace overseer
