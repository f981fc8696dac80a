#include "core/executor/test_kernels.h"

#include <atomic>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/op_kernel.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace testing_kernels {
namespace {

absl::Mutex g_mu;
std::map<std::string, std::vector<std::string>>* Logs() {
  static auto* logs = new std::map<std::string, std::vector<std::string>>();
  return logs;
}
std::set<std::string>* Signals() {
  static auto* signals = new std::set<std::string>();
  return signals;
}

REGISTER_OP("TestConstInt").Output("out: int32").Attr("value: int").SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestAddOne").Input("x: int32").Output("y: int32").SetShapeFn(shape_fn::Unchanged);
REGISTER_OP("TestFail").Output("out: int32").Attr("message: string").SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestBlockUntilCancelled").Output("out: int32").SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestRendezvous")
    .Output("out: int32")
    .Attr("key: string")
    .Attr("peer: string")
    .SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestRecord").Output("out: int32").Attr("log: string").SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestCheapThread")
    .Output("out: int32")
    .Attr("log: string")
    .SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestExpensiveThread")
    .Output("out: int32")
    .Attr("log: string")
    .SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestElementsThread")
    .Input("x: int32")
    .Output("out: int32")
    .Attr("log: string")
    .Attr("elements: int")
    .SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestVar").Output("ref: Ref(int32)").SetIsStateful().SetShapeFn(shape_fn::Scalar);
REGISTER_OP("TestAssign")
    .Input("ref: Ref(int32)")
    .Input("value: int32")
    .Output("out: Ref(int32)")
    .SetShapeFn(shape_fn::Unchanged);
REGISTER_OP("TestAsyncAddOne")
    .Input("x: int32")
    .Output("y: int32")
    .Attr("log: string")
    .SetShapeFn(shape_fn::Unchanged);
REGISTER_OP("TestCounter").Output("out: int32").SetIsStateful().SetShapeFn(shape_fn::Scalar);

class ConstIntOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    int64_t v;
    if (auto s = c->GetAttr("value", &v); !s.ok()) return s;
    value_ = Tensor::Scalar<int32_t>(static_cast<int32_t>(v));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, value_);
    return absl::OkStatus();
  }

 private:
  Tensor value_;
};
REGISTER_KERNEL(ConstIntOp, "TestConstInt");

class AddOneOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    auto in = ctx->input_value(0);
    if (!in.ok()) return in.status();
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, in->shape()));
    out->flat<int32_t>() = in->flat<int32_t>() + 1;
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(AddOneOp, "TestAddOne");

class FailOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* /*ctx*/) override {
    std::string message;
    if (auto s = GetNodeAttr(def(), "message", &message); !s.ok()) return s;
    return absl::InvalidArgumentError(message);
  }
};
REGISTER_KERNEL(FailOp, "TestFail");

class BlockUntilCancelledOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool MayWait() const override { return true; }
  absl::Status Compute(OpKernelContext* ctx) override {
    auto cancelled = std::make_shared<absl::Notification>();
    auto token = ctx->cancellation()->RegisterCallback([cancelled] { cancelled->Notify(); });
    if (token != CancellationManager::kInvalidToken) cancelled->WaitForNotification();
    return absl::CancelledError("blocked op cancelled");
  }
};
REGISTER_KERNEL(BlockUntilCancelledOp, "TestBlockUntilCancelled");

// Waits for its peer's signal; gives up when the step is cancelled.
class RendezvousOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool MayWait() const override { return true; }
  absl::Status Compute(OpKernelContext* ctx) override {
    std::string key, peer;
    if (auto s = GetNodeAttr(def(), "key", &key); !s.ok()) return s;
    if (auto s = GetNodeAttr(def(), "peer", &peer); !s.ok()) return s;
    auto cancelled = std::make_shared<bool>(false);
    auto token = ctx->cancellation()->RegisterCallback([cancelled] {
      absl::MutexLock lock(&g_mu);
      *cancelled = true;
    });
    bool ok;
    {
      absl::MutexLock lock(&g_mu);
      if (token == CancellationManager::kInvalidToken) *cancelled = true;
      Signals()->insert(key);
      auto ready = [&]() { return Signals()->count(peer) > 0 || *cancelled; };
      g_mu.Await(absl::Condition(&ready));
      ok = Signals()->count(peer) > 0;
    }
    if (token != CancellationManager::kInvalidToken) {
      ctx->cancellation()->DeregisterCallback(token);
    }
    if (!ok) return absl::CancelledError("rendezvous cancelled");
    ctx->set_output(0, Tensor::Scalar<int32_t>(1));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(RendezvousOp, "TestRendezvous");

// Appends Entry() to TestLog(attr "log").
class LogOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    std::string log;
    if (auto s = GetNodeAttr(def(), "log", &log); !s.ok()) return s;
    {
      absl::MutexLock lock(&g_mu);
      (*Logs())[log].push_back(Entry());
    }
    ctx->set_output(0, Tensor::Scalar<int32_t>(0));
    return absl::OkStatus();
  }

 protected:
  virtual std::string Entry() const = 0;
};

class RecordOp : public LogOp {
 public:
  using LogOp::LogOp;

 protected:
  std::string Entry() const override { return name(); }
};
REGISTER_KERNEL(RecordOp, "TestRecord");

class CheapThreadOp : public LogOp {
 public:
  using LogOp::LogOp;
  bool IsExpensive() const override { return false; }

 protected:
  std::string Entry() const override { return ThreadName(); }
};
REGISTER_KERNEL(CheapThreadOp, "TestCheapThread");

class ExpensiveThreadOp : public LogOp {
 public:
  using LogOp::LogOp;

 protected:
  std::string Entry() const override { return ThreadName(); }
};
REGISTER_KERNEL(ExpensiveThreadOp, "TestExpensiveThread");

class ElementsThreadOp : public LogOp {
 public:
  using LogOp::LogOp;
  absl::Status Init(OpKernelConstruction*) override {
    return GetNodeAttr(def(), "elements", &elements_);
  }
  bool CostFollowsElements() const override { return true; }
  int64_t ElementsTouched(absl::Span<const TensorValue>) const override { return elements_; }

 protected:
  std::string Entry() const override { return ThreadName(); }

 private:
  int64_t elements_ = 0;
};
REGISTER_KERNEL(ElementsThreadOp, "TestElementsThread");

// A TestAsyncAddOne waiting for CompleteAsync, or for its step's cancellation: the
// first of the two completes it.
struct PendingAsync {
  OpKernelContext* ctx = nullptr;
  OpKernel::DoneCallback done;
  int32_t result = 0;
  CancellationManager::Token token = CancellationManager::kInvalidToken;
  std::atomic<bool> completed{false};

  void Complete(const absl::Status& status) {
    if (completed.exchange(true)) return;
    if (status.ok()) ctx->set_output(0, Tensor::Scalar<int32_t>(result));
    OpKernel::DoneCallback callback = std::move(done);
    callback(status);
  }
};
std::map<std::string, std::vector<std::shared_ptr<PendingAsync>>>* Pending() {
  static auto* pending = new std::map<std::string, std::vector<std::shared_ptr<PendingAsync>>>();
  return pending;
}

class AsyncAddOneOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool MayWait() const override { return true; }
  bool IsAsync() const override { return true; }
  absl::Status Compute(OpKernelContext*) override {
    return absl::UnimplementedError("TestAsyncAddOne runs only through ComputeAsync");
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    std::string log;
    if (absl::Status s = GetNodeAttr(def(), "log", &log); !s.ok()) {
      done(s);
      return;
    }
    auto pending = std::make_shared<PendingAsync>();
    pending->ctx = ctx;
    pending->done = std::move(done);
    pending->result = ctx->input(0).scalar<int32_t>() + 1;
    if (log == "inline") {
      pending->Complete(absl::OkStatus());
      return;
    }
    CancellationManager* cancellation = ctx->cancellation();
    {
      absl::MutexLock lock(&g_mu);
      (*Pending())[log].push_back(pending);
    }
    pending->token = cancellation->RegisterCallback(
        [pending, cancellation] { pending->Complete(cancellation->status()); });
    if (pending->token == CancellationManager::kInvalidToken) {
      pending->Complete(cancellation->status());
    }
  }
};
REGISTER_KERNEL(AsyncAddOneOp, "TestAsyncAddOne");

class VarOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    auto var = ctx->resource_mgr()->LookupOrCreate<Var>(
        ResourceMgr::kDefaultContainer, name(),
        []() -> absl::StatusOr<std::shared_ptr<Var>> { return std::make_shared<Var>(DT_INT32); });
    if (!var.ok()) return var.status();
    ctx->set_output_ref(0, *var);
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(VarOp, "TestVar");

class AssignOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    Tensor value = ctx->input(1);
    {
      Var* var = ctx->input_ref(0);
      absl::MutexLock lock(var->mu());
      *var->tensor() = value.DeepCopy();
    }
    ctx->set_output_ref(0, ctx->input_ref_shared(0));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(AssignOp, "TestAssign");

class CounterOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<int32_t>(next_++));
    return absl::OkStatus();
  }

 private:
  std::atomic<int32_t> next_{0};
};
REGISTER_KERNEL(CounterOp, "TestCounter");

}  // namespace

std::string ThreadName() {
  std::ostringstream name;
  name << std::this_thread::get_id();
  return name.str();
}

bool CompleteAsync(const std::string& log, const absl::Status& status, absl::Duration wait) {
  std::shared_ptr<PendingAsync> pending;
  {
    absl::MutexLock lock(&g_mu);
    auto waiting = [log]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) { return !(*Pending())[log].empty(); };
    if (!g_mu.AwaitWithTimeout(absl::Condition(&waiting), wait)) return false;
    std::vector<std::shared_ptr<PendingAsync>>& list = (*Pending())[log];
    pending = list.front();
    list.erase(list.begin());
  }
  pending->Complete(status);
  return true;
}

std::vector<std::string> TestLog(const std::string& log) {
  absl::MutexLock lock(&g_mu);
  return (*Logs())[log];
}

}  // namespace testing_kernels
}  // namespace overseer
