// Kernels of CheckpointSaveShard and CheckpointRestore (checkpoint_ops.cc). The store
// is found through the process registry of checkpoint_store/location.h.

#include <cstring>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// The bytes of a numeric or bool tensor; INVALID_ARGUMENT naming `name` otherwise.
absl::StatusOr<absl::string_view> RawBytes(const Tensor& t, const std::string& name) {
  const void* data = nullptr;
  switch (t.dtype()) {
    case DT_FLOAT:
      data = t.data<float>();
      break;
    case DT_DOUBLE:
      data = t.data<double>();
      break;
    case DT_INT32:
      data = t.data<int32_t>();
      break;
    case DT_INT64:
      data = t.data<int64_t>();
      break;
    case DT_BOOL:
      data = t.data<bool>();
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot checkpoint ", name, " of dtype ", DataTypeString(t.dtype()),
                       "; checkpoints hold numeric and bool tensors"));
  }
  return absl::string_view(static_cast<const char*>(data),
                           static_cast<size_t>(t.NumElements()) * DataTypeSize(t.dtype()));
}

void* MutableRawBytes(Tensor* t) {
  switch (t->dtype()) {
    case DT_FLOAT:
      return t->data<float>();
    case DT_DOUBLE:
      return t->data<double>();
    case DT_INT32:
      return t->data<int32_t>();
    case DT_INT64:
      return t->data<int64_t>();
    case DT_BOOL:
      return t->data<bool>();
    default:
      return nullptr;
  }
}

absl::StatusOr<std::string> ScalarString(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_STRING || t.NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of ", ctx->kernel().name(), " must be a string scalar"));
  }
  return t.data<std::string>()[0];
}

absl::StatusOr<std::vector<std::string>> Names(OpKernelContext* ctx, int i, int expected) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_STRING || t.NumElements() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("tensor_names of ", ctx->kernel().name(),
                                                   " must hold ", expected, " strings, got ",
                                                   t.DebugString()));
  }
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + expected);
}

class CheckpointSaveShardOp : public OpKernel {
 public:
  explicit CheckpointSaveShardOp(OpKernelConstruction* c) : OpKernel(c) {}
  absl::Status Init(OpKernelConstruction* c) override { return c->GetAttr("shard_id", &shard_id_); }
  bool MayWait() const override { return true; }  // Disk or checkpoint store calls.

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::string location, ScalarString(ctx, 0, "location"));
    ASSIGN_OR_RETURN(std::string id, ScalarString(ctx, 1, "checkpoint_id"));
    const int n = ctx->num_inputs() - 3;
    ASSIGN_OR_RETURN(std::vector<std::string> names, Names(ctx, 2, n));
    ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
    ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer,
                     where.store->OpenShard(id, static_cast<int>(shard_id_)));
    for (int i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(Tensor t, ctx->input_value(3 + i));
      ASSIGN_OR_RETURN(absl::string_view bytes, RawBytes(t, names[i]));
      TensorHeader header;
      header.set_name(names[i]);
      header.set_dtype(t.dtype());
      t.shape().ToProto(header.mutable_shape());
      header.set_size(static_cast<int64_t>(bytes.size()));
      RETURN_IF_ERROR(writer->AddTensor(header, bytes));
    }
    return writer->Close();
  }

 private:
  int64_t shard_id_ = 0;
};
REGISTER_KERNEL(CheckpointSaveShardOp, "CheckpointSaveShard");

// Receives the tensors of a CheckpointRestore straight into its outputs: each output
// is allocated uninitialised and the store (or its gRPC client) writes its bytes once.
class OutputReceiver : public TensorReceiver {
 public:
  OutputReceiver(OpKernelContext* ctx, const std::vector<std::string>* names,
                 const std::string* checkpoint)
      : ctx_(ctx), names_(names), checkpoint_(checkpoint) {}

  absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
    const int i = next_;
    if (i >= static_cast<int>(names_->size()) || header.name() != (*names_)[i]) {
      return absl::InternalError(
          absl::StrCat("store returned tensor ", header.name(), " out of order"));
    }
    const DataType expected = ctx_->kernel().output_type(i);
    if (header.dtype() != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", header.name(), " in checkpoint ", *checkpoint_, " is ",
                       DataTypeString(header.dtype()), " but ", ctx_->kernel().name(), " expects ",
                       DataTypeString(expected)));
    }
    ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromProto(header.shape()));
    if (!IsSupportedDataType(expected) || expected == DT_STRING ||
        shape.num_elements() * static_cast<int64_t>(DataTypeSize(expected)) != header.size()) {
      return absl::DataLossError(absl::StrCat("tensor ", header.name(), " of checkpoint ",
                                              *checkpoint_, " has ", header.size(),
                                              " bytes, not what its shape needs"));
    }
    ASSIGN_OR_RETURN(Tensor out, Tensor::AllocateUninitialized(expected, shape));
    char* dst = static_cast<char*>(MutableRawBytes(&out));
    if (dst == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot restore ", header.name(), " of dtype ", DataTypeString(expected)));
    }
    ctx_->set_output(i, std::move(out));
    return dst;
  }

  absl::Status Received(const TensorHeader&) override {
    ++next_;
    return absl::OkStatus();
  }

  int received() const { return next_; }

 private:
  OpKernelContext* const ctx_;
  const std::vector<std::string>* const names_;
  const std::string* const checkpoint_;
  int next_ = 0;
};

class CheckpointRestoreOp : public OpKernel {
 public:
  explicit CheckpointRestoreOp(OpKernelConstruction* c) : OpKernel(c) {}
  bool MayWait() const override { return true; }  // Disk or checkpoint store calls.

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::string location, ScalarString(ctx, 0, "location"));
    ASSIGN_OR_RETURN(std::string checkpoint, ScalarString(ctx, 1, "checkpoint"));
    const int n = ctx->num_outputs();
    ASSIGN_OR_RETURN(std::vector<std::string> names, Names(ctx, 2, n));
    if (n == 0) return absl::OkStatus();  // An empty list would read every tensor.
    ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
    OutputReceiver receiver(ctx, &names, &checkpoint);
    RETURN_IF_ERROR(where.store->ReadTensorsInto(where.run, checkpoint, names, &receiver));
    if (receiver.received() != n) {
      return absl::DataLossError(absl::StrCat("the store returned ", receiver.received(),
                                              " of the ", n, " tensors of checkpoint ", checkpoint,
                                              " that ", name(), " reads"));
    }
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(CheckpointRestoreOp, "CheckpointRestore");

}  // namespace
}  // namespace overseer
