// Kernels of CheckpointSaveShard, CheckpointSnapshot, CheckpointWriteSnapshot,
// CheckpointRestore and CheckpointRestoreVariables (checkpoint_ops.cc). The store is
// found through the process registry of checkpoint_store/location.h.

#include <errno.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "checkpoint_store/location.h"
#include "core/env.h"
#include "core/kernels/state/var_util.h"
#include "core/logging.h"
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

// Tensors of one shard of a checkpoint, as they were when taken.
struct ShardTensors {
  std::vector<std::string> names;
  std::vector<Tensor> tensors;
};

// Inputs [first, first + names.size()) of `ctx`, all taken before any is written:
// references, since variables copy on write.
absl::StatusOr<ShardTensors> TakeInputs(OpKernelContext* ctx, int first,
                                        std::vector<std::string> names) {
  ShardTensors shard;
  for (size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(Tensor t, ctx->input_value(first + static_cast<int>(i)));
    RETURN_IF_ERROR(RawBytes(t, names[i]).status());
    shard.tensors.push_back(std::move(t));
  }
  shard.names = std::move(names);
  return shard;
}

// Runs pieces 0..n-1 of a job in order, one at a time, from a thread of its own at the
// lowest CPU priority (SCHED_IDLE), so that they take only CPU time nothing else wants.
// Lowest is absolute: on a host whose CPUs are saturated that thread would wait for
// minutes, so when no piece has completed for kStall the calling thread (at its own
// priority) runs the remaining pieces itself, after the one in progress.
class IdlePriorityRunner {
 public:
  static constexpr absl::Duration kStall = absl::Milliseconds(200);

  // The first error stops the job and is returned.
  static absl::Status Run(size_t n, const std::function<absl::Status(size_t)>& piece) {
    IdlePriorityRunner runner(n, piece);
    std::thread idle([&runner] {
      const sched_param param{};
      static std::atomic<bool> warned{false};
      if (::sched_setscheduler(0, SCHED_IDLE, &param) != 0 && !warned.exchange(true)) {
        LOG(WARNING) << "checkpoint shards are written at normal priority: SCHED_IDLE: "
                     << std::strerror(errno);
      }
      runner.Work(/*idle=*/true);
    });
    if (runner.WaitOrTakeOver()) runner.Work(/*idle=*/false);
    idle.join();
    absl::MutexLock lock(&runner.mu_);
    return runner.status_;
  }

 private:
  IdlePriorityRunner(size_t n, const std::function<absl::Status(size_t)>& piece)
      : n_(n), piece_(piece) {}

  // Runs the next pieces until none is left, one fails, or (idle) the caller took over.
  void Work(bool idle) {
    for (;;) {
      absl::MutexLock turn(&turn_);  // One piece at a time, in order.
      size_t i;
      {
        absl::MutexLock lock(&mu_);
        if (next_ >= n_ || !status_.ok() || (idle && taken_over_)) return;
        i = next_;
      }
      absl::Status s = piece_(i);
      absl::MutexLock lock(&mu_);
      ++next_;
      if (status_.ok()) status_ = std::move(s);
      progress_.SignalAll();
    }
  }

  // Waits while the idle thread makes progress; true if it stalled and the caller
  // should run the rest.
  bool WaitOrTakeOver() {
    absl::MutexLock lock(&mu_);
    size_t seen = next_;
    while (next_ < n_ && status_.ok()) {
      if (progress_.WaitWithTimeout(&mu_, kStall) && next_ == seen) {
        taken_over_ = true;
        static std::atomic<bool> logged{false};
        if (!logged.exchange(true)) {
          LOG(INFO) << "a checkpoint shard written at idle priority made no progress for "
                    << absl::FormatDuration(kStall)
                    << " (busy CPUs or a slow disk): its writer continues at normal priority "
                    << "(later ones are not logged)";
        }
        return true;
      }
      seen = next_;
    }
    return false;
  }

  const size_t n_;
  const std::function<absl::Status(size_t)>& piece_;
  absl::Mutex turn_;
  absl::Mutex mu_;
  absl::CondVar progress_;
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool taken_over_ ABSL_GUARDED_BY(mu_) = false;
};

// Tensor bytes per piece of a shard's write: large enough that a direct write keeps
// the disk busy, small enough that the caller taking over waits little for the piece
// in progress.
constexpr size_t kWritePieceBytes = size_t{8} << 20;

// Writes the shard: opening and closing it (calls to the store) at the caller's
// priority, the tensors' bytes (CRC32C, writes or streaming: the save's CPU work) at
// idle priority (IdlePriorityRunner) unless OVERSEER_CHECKPOINT_IDLE_WRITES is "0",
// "false", "no" or "off". Training steps then keep their pace while a checkpoint is
// written (docs/checkpoint_format.md, "Writing at idle priority").
absl::Status WriteShard(const std::string& location, const std::string& id, int64_t shard_id,
                        const ShardTensors& shard) {
  ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
  ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer,
                   where.store->OpenShard(id, static_cast<int>(shard_id)));
  // Piece k: tensor `tensor`, bytes [offset, offset + length); the first of each tensor
  // begins it.
  struct Piece {
    size_t tensor;
    size_t offset;
    size_t length;
  };
  std::vector<Piece> pieces;
  std::vector<absl::string_view> bytes;
  for (size_t i = 0; i < shard.names.size(); ++i) {
    ASSIGN_OR_RETURN(bytes.emplace_back(), RawBytes(shard.tensors[i], shard.names[i]));
    size_t offset = 0;
    do {
      const size_t length = std::min(kWritePieceBytes, bytes[i].size() - offset);
      pieces.push_back(Piece{i, offset, length});
      offset += length;
    } while (offset < bytes[i].size());
  }
  const std::function<absl::Status(size_t)> write = [&](size_t k) -> absl::Status {
    const Piece& p = pieces[k];
    if (p.offset == 0) {
      const Tensor& t = shard.tensors[p.tensor];
      TensorHeader header;
      header.set_name(shard.names[p.tensor]);
      header.set_dtype(t.dtype());
      t.shape().ToProto(header.mutable_shape());
      header.set_size(static_cast<int64_t>(bytes[p.tensor].size()));
      RETURN_IF_ERROR(writer->BeginTensor(header));
    }
    return writer->Append(bytes[p.tensor].substr(p.offset, p.length));
  };
  static const bool idle = !EnvSwitchedOff("OVERSEER_CHECKPOINT_IDLE_WRITES");
  if (idle) {
    RETURN_IF_ERROR(IdlePriorityRunner::Run(pieces.size(), write));
  } else {
    for (size_t k = 0; k < pieces.size(); ++k) RETURN_IF_ERROR(write(k));
  }
  return writer->Close();
}

// The kernels of one shard of a save: its `shard_id` attr.
class ShardKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override { return c->GetAttr("shard_id", &shard_id_); }

 protected:
  int64_t shard_id_ = 0;
};

class CheckpointSaveShardOp : public ShardKernel {
 public:
  explicit CheckpointSaveShardOp(OpKernelConstruction* c) : ShardKernel(c) {}
  bool MayWait() const override { return true; }  // Disk or checkpoint store calls.

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::string location, ScalarString(ctx, 0, "location"));
    ASSIGN_OR_RETURN(std::string id, ScalarString(ctx, 1, "checkpoint_id"));
    const int n = ctx->num_inputs() - 3;
    ASSIGN_OR_RETURN(std::vector<std::string> names, Names(ctx, 2, n));
    // Every variable as of one moment on this task, however long the writing takes.
    ASSIGN_OR_RETURN(ShardTensors shard, TakeInputs(ctx, 3, std::move(names)));
    return WriteShard(location, id, shard_id_, shard);
  }
};
REGISTER_KERNEL(CheckpointSaveShardOp, "CheckpointSaveShard");

// The snapshots of this process that wait to be written, by snapshot id and shard.
class SnapshotTable {
 public:
  // Snapshots never written (their saver failed or went away) are dropped after this.
  static constexpr absl::Duration kLifetime = absl::Minutes(10);

  static SnapshotTable* Global() {
    static SnapshotTable* const table = new SnapshotTable();
    return table;
  }

  void Put(const std::string& id, int64_t shard_id, ShardTensors shard) {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (now - it->second.taken > kLifetime) {
        LOG(WARNING) << "dropping checkpoint snapshot " << it->first.first << " shard "
                     << it->first.second << ", never written after "
                     << absl::FormatDuration(kLifetime);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
    entries_[{id, shard_id}] = Entry{std::move(shard), now};
  }

  absl::StatusOr<ShardTensors> Take(const std::string& id, int64_t shard_id) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find({id, shard_id});
    if (it == entries_.end()) {
      return absl::NotFoundError(absl::StrCat(
          "no checkpoint snapshot ", id, " of shard ", shard_id,
          " on this task: it restarted since the snapshot, or the snapshot was written "
          "already or expired (after ",
          absl::FormatDuration(kLifetime), ")"));
    }
    ShardTensors shard = std::move(it->second.shard);
    entries_.erase(it);
    return shard;
  }

 private:
  struct Entry {
    ShardTensors shard;
    absl::Time taken;
  };
  absl::Mutex mu_;
  std::map<std::pair<std::string, int64_t>, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

class CheckpointSnapshotOp : public ShardKernel {
 public:
  explicit CheckpointSnapshotOp(OpKernelConstruction* c) : ShardKernel(c) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::string id, ScalarString(ctx, 0, "snapshot_id"));
    if (id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("snapshot_id of ", ctx->kernel().name(), " is empty"));
    }
    const int n = ctx->num_inputs() - 2;
    ASSIGN_OR_RETURN(std::vector<std::string> names, Names(ctx, 1, n));
    ASSIGN_OR_RETURN(ShardTensors shard, TakeInputs(ctx, 2, std::move(names)));
    SnapshotTable::Global()->Put(id, shard_id_, std::move(shard));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(CheckpointSnapshotOp, "CheckpointSnapshot");

class CheckpointWriteSnapshotOp : public ShardKernel {
 public:
  explicit CheckpointWriteSnapshotOp(OpKernelConstruction* c) : ShardKernel(c) {}
  bool MayWait() const override { return true; }  // Disk or checkpoint store calls.

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::string location, ScalarString(ctx, 0, "location"));
    ASSIGN_OR_RETURN(std::string id, ScalarString(ctx, 1, "checkpoint_id"));
    ASSIGN_OR_RETURN(std::string snapshot_id, ScalarString(ctx, 2, "snapshot_id"));
    ASSIGN_OR_RETURN(ShardTensors shard, SnapshotTable::Global()->Take(snapshot_id, shard_id_));
    return WriteShard(location, id, shard_id_, shard);
  }
};
REGISTER_KERNEL(CheckpointWriteSnapshotOp, "CheckpointWriteSnapshot");

// The shape of tensor i of a restore as the store announced it in `header`, checked:
// the name expected in its place, dtype `expected` (what `target`, the output or the
// variable it goes to, holds), a supported dtype and a size its shape needs.
absl::StatusOr<TensorShape> CheckRestoredHeader(const TensorHeader& header,
                                                const std::vector<std::string>& names, int i,
                                                DataType expected, const std::string& target,
                                                const std::string& checkpoint) {
  if (i >= static_cast<int>(names.size()) || header.name() != names[i]) {
    return absl::InternalError(
        absl::StrCat("store returned tensor ", header.name(), " out of order"));
  }
  if (header.dtype() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", header.name(), " in checkpoint ", checkpoint, " is ",
        DataTypeString(header.dtype()), " but ", target, " is ", DataTypeString(expected)));
  }
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromProto(header.shape()));
  if (!IsSupportedDataType(expected) || expected == DT_STRING ||
      shape.num_elements() * static_cast<int64_t>(DataTypeSize(expected)) != header.size()) {
    return absl::DataLossError(absl::StrCat("tensor ", header.name(), " of checkpoint ", checkpoint,
                                            " has ", header.size(),
                                            " bytes, not what its shape needs"));
  }
  return shape;
}

// Receives the tensors of a CheckpointRestore straight into its outputs: each output
// is allocated uninitialised and the store (or its gRPC client) writes its bytes once.
class OutputReceiver : public TensorReceiver {
 public:
  OutputReceiver(OpKernelContext* ctx, const std::vector<std::string>* names,
                 const std::string* checkpoint)
      : ctx_(ctx), names_(names), checkpoint_(checkpoint) {}

  absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
    const int i = next_;
    const DataType expected = i < ctx_->num_outputs() ? ctx_->kernel().output_type(i) : DT_INVALID;
    ASSIGN_OR_RETURN(TensorShape shape,
                     CheckRestoredHeader(header, *names_, i, expected,
                                         absl::StrCat("output ", i, " of ", ctx_->kernel().name()),
                                         *checkpoint_));
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

// Receives the tensors of a CheckpointRestoreVariables straight into its variables
// (checkpoint_ops.cc says when in place). Between Allocate and Received a tensor's
// buffer is the receiver's alone: the variable reads as uninitialized meanwhile.
class VariableReceiver : public TensorReceiver {
 public:
  VariableReceiver(OpKernelContext* ctx, std::vector<Var*> vars,
                   const std::vector<std::string>* names, const std::string* checkpoint)
      : ctx_(ctx), vars_(std::move(vars)), names_(names), checkpoint_(checkpoint) {}

  absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
    const int i = next_;
    if (i >= static_cast<int>(vars_.size())) {
      return absl::InternalError(
          absl::StrCat("store returned tensor ", header.name(), " out of order"));
    }
    Var* var = vars_[i];
    ASSIGN_OR_RETURN(
        TensorShape shape,
        CheckRestoredHeader(header, *names_, i, var->dtype(),
                            absl::StrCat("variable ", InputNodeName(*ctx_, 3 + i)), *checkpoint_));
    const DataType expected = var->dtype();
    {
      absl::MutexLock lock(var->mu());
      RETURN_IF_ERROR(CheckAssignedShape(*ctx_, 3 + i, var, shape));
      Tensor* current = var->tensor();
      if (current->IsInitialized() && current->shape() == shape && current->RefCountIsOne()) {
        pending_ = std::move(*current);  // In place: ours alone until Received.
      }
      *current = Tensor();  // Any other buffer is dropped before a new one is taken.
      touched_ = i + 1;
    }
    if (!pending_.IsInitialized()) {
      ASSIGN_OR_RETURN(pending_, Tensor::AllocateUninitialized(expected, shape));
    }
    return static_cast<char*>(MutableRawBytes(&pending_));
  }

  absl::Status Received(const TensorHeader&) override {
    Var* var = vars_[next_];
    {
      absl::MutexLock lock(var->mu());
      *var->tensor() = std::move(pending_);
    }
    pending_ = Tensor();
    ++next_;
    return absl::OkStatus();
  }

  // After a failure: every variable it began to write reads as uninitialized.
  void Abandon() {
    for (int i = 0; i < touched_; ++i) {
      absl::MutexLock lock(vars_[i]->mu());
      *vars_[i]->tensor() = Tensor();
    }
    pending_ = Tensor();
  }

  int received() const { return next_; }

 private:
  OpKernelContext* const ctx_;
  const std::vector<Var*> vars_;
  const std::vector<std::string>* const names_;
  const std::string* const checkpoint_;
  Tensor pending_;
  int next_ = 0;
  int touched_ = 0;  // Variables [0, touched_) were begun.
};

class CheckpointRestoreVariablesOp : public OpKernel {
 public:
  explicit CheckpointRestoreVariablesOp(OpKernelConstruction* c) : OpKernel(c) {}
  bool MayWait() const override { return true; }  // Disk or checkpoint store calls.

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::string location, ScalarString(ctx, 0, "location"));
    ASSIGN_OR_RETURN(std::string checkpoint, ScalarString(ctx, 1, "checkpoint"));
    const int n = ctx->num_inputs() - 3;
    ASSIGN_OR_RETURN(std::vector<std::string> names, Names(ctx, 2, n));
    std::vector<Var*> vars;
    for (int i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(Var * var, RefInput(ctx, 3 + i));
      vars.push_back(var);
    }
    ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
    VariableReceiver receiver(ctx, std::move(vars), &names, &checkpoint);
    absl::Status read = where.store->ReadTensorsInto(where.run, checkpoint, names, &receiver);
    if (read.ok() && receiver.received() != n) {
      read = absl::DataLossError(absl::StrCat("the store returned ", receiver.received(),
                                              " of the ", n, " tensors of checkpoint ", checkpoint,
                                              " that ", name(), " reads"));
    }
    if (!read.ok()) receiver.Abandon();
    return read;
  }
};
REGISTER_KERNEL(CheckpointRestoreVariablesOp, "CheckpointRestoreVariables");

}  // namespace
}  // namespace overseer
