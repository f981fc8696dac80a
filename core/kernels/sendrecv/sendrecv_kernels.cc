// Kernels of _Send and _Recv over the step's rendezvous (OpKernelContext::rendezvous).

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/cluster/rendezvous_key.h"
#include "core/op_kernel.h"
#include "core/rendezvous.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// Reads the attrs shared by both ops and builds the key they name.
class SendRecvOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Init(OpKernelConstruction* c) override {
    std::string tensor_name, send_device, recv_device;
    int64_t incarnation = 0;
    RETURN_IF_ERROR(c->GetAttr("tensor_name", &tensor_name));
    RETURN_IF_ERROR(c->GetAttr("send_device", &send_device));
    RETURN_IF_ERROR(c->GetAttr("recv_device", &recv_device));
    RETURN_IF_ERROR(c->GetAttr("send_device_incarnation", &incarnation));
    ASSIGN_OR_RETURN(
        key_, RendezvousKey::Parse(MakeRendezvousKey(
                  send_device, static_cast<uint64_t>(incarnation), recv_device, tensor_name)));
    return absl::OkStatus();
  }

 protected:
  absl::StatusOr<Rendezvous*> GetRendezvous(OpKernelContext* ctx) const {
    if (ctx->rendezvous() == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(type_string(), " of '", key_.parsed.tensor_name,
                       "' needs a step rendezvous: run partitioned graphs through a worker"));
    }
    return ctx->rendezvous();
  }

  RendezvousKey key_;
};

class SendOp : public SendRecvOp {
 public:
  using SendRecvOp::SendRecvOp;
  bool IsExpensive() const override { return false; }  // Hands the tensor over.
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Rendezvous * rendezvous, GetRendezvous(ctx));
    ASSIGN_OR_RETURN(Tensor value, ctx->input_value(0));
    return rendezvous->Send(key_, value);
  }
};
REGISTER_KERNEL(SendOp, "_Send");

class RecvOp : public SendRecvOp {
 public:
  using SendRecvOp::SendRecvOp;
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(SendRecvOp::Init(c));
    return c->GetAttr("client_terminated", &client_terminated_);
  }
  // A tensor from the client (a feed) is in the rendezvous before the step runs; one
  // from another task comes when that task sends it.
  bool MayWait() const override { return !client_terminated_; }
  bool IsExpensive() const override { return false; }
  // A tensor from another task is waited for without a thread where the rendezvous can
  // (worker/rendezvous_mgr.h).
  bool IsAsync() const override { return !client_terminated_; }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Rendezvous * rendezvous, GetRendezvous(ctx));
    return Output(ctx, rendezvous->Recv(key_, WaitOf(ctx)));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    absl::StatusOr<Rendezvous*> rendezvous = GetRendezvous(ctx);
    if (!rendezvous.ok()) {
      done(rendezvous.status());
      return;
    }
    (*rendezvous)
        ->RecvAsync(key_, WaitOf(ctx),
                    [this, ctx, done = std::move(done)](absl::StatusOr<Tensor> value) {
                      done(Output(ctx, std::move(value)));
                    });
  }

 private:
  static RendezvousWait WaitOf(OpKernelContext* ctx) {
    RendezvousWait wait;
    wait.cancellation = ctx->cancellation();
    wait.clock = ctx->clock();
    wait.deadline = ctx->deadline();
    return wait;
  }
  // Sets the output to the received `value`, or returns the error.
  absl::Status Output(OpKernelContext* ctx, absl::StatusOr<Tensor> value) const {
    RETURN_IF_ERROR(value.status());
    if (value->dtype() != output_type(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "received ", DataTypeString(value->dtype()), " for '", key_.parsed.tensor_name,
          "' but _Recv expects ", DataTypeString(output_type(0))));
    }
    ctx->set_output(0, *std::move(value));
    return absl::OkStatus();
  }

  bool client_terminated_ = false;
};
REGISTER_KERNEL(RecvOp, "_Recv");

}  // namespace
}  // namespace overseer
