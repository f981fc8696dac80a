// CPU kernels of the queue ops. Blocking kernels wait on the step's cancellation
// manager, the step deadline and their own timeout_ms, whichever comes first.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/queue/handle_util.h"
#include "core/kernels/queue/queue.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// FIFOQueue, RandomShuffleQueue and PaddingFIFOQueue: one queue resource class, told
// apart by its options (the other queue ops work on all three).
template <QueueOptions::Kind kKind>
class QueueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    options_.kind = kKind;
    RETURN_IF_ERROR(c->GetAttr("component_types", &types_));
    RETURN_IF_ERROR(c->GetAttr("shapes", &shapes_));
    RETURN_IF_ERROR(c->GetAttr("capacity", &options_.capacity));
    RETURN_IF_ERROR(c->GetAttr("container", &container_));
    RETURN_IF_ERROR(c->GetAttr("shared_name", &shared_name_));
    if (kKind == QueueOptions::Kind::kRandomShuffle) {
      RETURN_IF_ERROR(c->GetAttr("min_after_dequeue", &options_.min_after_dequeue));
      RETURN_IF_ERROR(c->GetAttr("seed", &options_.seed));
      RETURN_IF_ERROR(c->GetAttr("seed2", &options_.seed2));
    }
    if (container_.empty()) container_ = ResourceMgr::kDefaultContainer;
    if (shared_name_.empty()) shared_name_ = name();
    // The queue's own checks, before any step runs.
    return Queue::Create(shared_name_, types_, shapes_, options_).status();
  }

  // Creates the queue on first run; outputs its handle.
  absl::Status Compute(OpKernelContext* ctx) override {
    if (ctx->resource_mgr() == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(type_string(), " needs a resource manager"));
    }
    std::function<absl::StatusOr<std::shared_ptr<Queue>>()> creator = [this]() {
      return Queue::Create(shared_name_, types_, shapes_, options_);
    };
    ASSIGN_OR_RETURN(std::shared_ptr<Queue> queue,
                     ctx->resource_mgr()->LookupOrCreate<Queue>(container_, shared_name_, creator));
    RETURN_IF_ERROR(queue->MatchesSignature(types_, shapes_, options_));
    ctx->set_output(0, Tensor::Scalar<std::string>(absl::StrCat(container_, "/", shared_name_)));
    return absl::OkStatus();
  }

 private:
  std::vector<DataType> types_;
  std::vector<PartialShape> shapes_;
  QueueOptions options_;
  std::string container_;
  std::string shared_name_;
};
using FIFOQueueOp = QueueOp<QueueOptions::Kind::kFifo>;
using RandomShuffleQueueOp = QueueOp<QueueOptions::Kind::kRandomShuffle>;
using PaddingFIFOQueueOp = QueueOp<QueueOptions::Kind::kPaddingFifo>;
REGISTER_KERNEL(FIFOQueueOp, "FIFOQueue");
REGISTER_KERNEL(RandomShuffleQueueOp, "RandomShuffleQueue");
REGISTER_KERNEL(PaddingFIFOQueueOp, "PaddingFIFOQueue");

absl::StatusOr<std::shared_ptr<Queue>> GetQueue(OpKernelContext* ctx) {
  return LookupHandle<Queue>(ctx, "queue");
}

// Base of the kernels that may block: builds the wait from the context and timeout_ms.
class BlockingQueueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    return c->GetAttr("timeout_ms", &timeout_ms_);
  }
  bool MayWait() const override { return true; }

 protected:
  absl::StatusOr<QueueWait> MakeWait(OpKernelContext* ctx) const {
    return MakeQueueWait(ctx, timeout_ms_, type_string());
  }

 private:
  int64_t timeout_ms_ = -1;
};

// QueueEnqueue (kMany = false) and QueueEnqueueMany (kMany = true).
template <bool kMany>
class EnqueueOp : public BlockingQueueOp {
 public:
  using BlockingQueueOp::BlockingQueueOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<Queue> queue, GetQueue(ctx));
    Queue::Tuple tuple;
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      ASSIGN_OR_RETURN(Tensor t, ctx->input_value(i));
      tuple.push_back(std::move(t));
    }
    ASSIGN_OR_RETURN(const QueueWait wait, MakeWait(ctx));
    return kMany ? queue->EnqueueMany(tuple, wait) : queue->Enqueue(tuple, wait);
  }
};
REGISTER_KERNEL(EnqueueOp<false>, "QueueEnqueue");
REGISTER_KERNEL(EnqueueOp<true>, "QueueEnqueueMany");

// QueueDequeue (kMany = false), QueueDequeueMany (kMany = true) and QueueDequeueUpTo
// (kMany and kUpTo).
template <bool kMany, bool kUpTo = false>
class DequeueOp : public BlockingQueueOp {
 public:
  using BlockingQueueOp::BlockingQueueOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<Queue> queue, GetQueue(ctx));
    std::vector<DataType> expected;
    for (int i = 0; i < num_outputs(); ++i) expected.push_back(output_type(i));
    if (expected != queue->component_types()) {
      return absl::InvalidArgumentError(absl::StrCat(type_string(), " expects ", expected.size(),
                                                     " components of the declared types, "
                                                     "but ",
                                                     queue->DebugString(),
                                                     " holds other component types"));
    }
    Queue::Tuple tuple;
    if (kMany) {
      ASSIGN_OR_RETURN(Tensor n_t, ctx->input_value(1));
      if (n_t.dtype() != DT_INT32 || n_t.dims() != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), " n must be an int32 scalar"));
      }
      ASSIGN_OR_RETURN(QueueWait wait, MakeWait(ctx));
      ASSIGN_OR_RETURN(tuple, queue->DequeueMany(n_t.scalar<int32_t>(), wait, kUpTo));
    } else {
      ASSIGN_OR_RETURN(QueueWait wait, MakeWait(ctx));
      ASSIGN_OR_RETURN(tuple, queue->Dequeue(wait));
    }
    for (size_t i = 0; i < tuple.size(); ++i) {
      ctx->set_output(static_cast<int>(i), std::move(tuple[i]));
    }
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(DequeueOp<false>, "QueueDequeue");
REGISTER_KERNEL(DequeueOp<true>, "QueueDequeueMany");
using DequeueUpToOp = DequeueOp<true, true>;
REGISTER_KERNEL(DequeueUpToOp, "QueueDequeueUpTo");

class QueueCloseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    return c->GetAttr("cancel_pending_enqueues", &cancel_pending_enqueues_);
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<Queue> queue, GetQueue(ctx));
    queue->Close(cancel_pending_enqueues_);
    return absl::OkStatus();
  }

 private:
  bool cancel_pending_enqueues_ = false;
};
REGISTER_KERNEL(QueueCloseOp, "QueueClose");

class QueueSizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<Queue> queue, GetQueue(ctx));
    ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(queue->Size())));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(QueueSizeOp, "QueueSize");

}  // namespace
}  // namespace overseer
