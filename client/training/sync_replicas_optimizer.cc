#include "client/training/sync_replicas_optimizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/graph/ops.h"
#include "client/graph/ops_queue.h"
#include "client/training/looper_thread.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// How often the chief's watchdog looks at the global step, and after how many looks
// without an update it adds a token.
constexpr absl::Duration kWatchInterval = absl::Seconds(1);
constexpr int kStalledLooks = 5;

class SyncReplicasHook : public SessionRunHook {
 public:
  SyncReplicasHook(SyncReplicasOptimizer* opt, bool is_chief, Operation init_tokens,
                   Operation close_token_queue, Output global_step_now, Output queue_size,
                   Operation add_token)
      : opt_(opt),
        is_chief_(is_chief),
        init_tokens_(init_tokens),
        close_token_queue_(close_token_queue),
        global_step_now_(global_step_now),
        queue_size_(queue_size),
        add_token_(add_token) {}

  absl::Status AfterCreateSession(ClientSession* session, Coordinator* coord) override {
    if (!is_chief_) return session->Run({}, {}, {opt_->local_step_init_op()}, nullptr);
    RETURN_IF_ERROR(session->Run({}, {}, {opt_->chief_init_op()}, nullptr));
    RETURN_IF_ERROR(session->Run({}, {}, {init_tokens_}, nullptr));
    RETURN_IF_ERROR(opt_->chief_queue_runner()->CreateThreads(session, coord).status());
    // The watchdog. A worker that dies while its gradients reach the accumulators leaves
    // them in some accumulators only: those take one round early and the others wait for
    // a gradient that the surviving workers, all waiting for a token, never send. A token
    // of the current global step lets one of them send a fresh gradient (of the current
    // variables, so the updates stay exact), which completes the round.
    LooperThreadOptions options;
    options.name = "SyncReplicasWatchdog";
    auto last_step = std::make_shared<int64_t>(-1);
    auto stalled = std::make_shared<int>(0);
    LooperThread::Loop(
        coord, kWatchInterval,
        [this, session, last_step, stalled]() -> absl::Status {
          std::vector<Tensor> out;
          RETURN_IF_ERROR(session->Run({global_step_now_, queue_size_}, &out));
          const int64_t step = out[0].scalar<int64_t>();
          if (step != *last_step) {
            *last_step = step;
            *stalled = 0;
            return absl::OkStatus();
          }
          if (++*stalled < kStalledLooks || out[1].scalar<int32_t>() > 0) return absl::OkStatus();
          LOG(WARNING) << "Synchronous training: no update since global step " << step << " for "
                       << kStalledLooks * kWatchInterval
                       << " and no token left; adding one (a worker may have died while sending "
                          "its gradients)";
          *stalled = 0;
          return session->Run({}, {}, {add_token_}, nullptr);
        },
        options);
    return absl::OkStatus();
  }

  absl::Status End(ClientSession* session) override {
    if (!is_chief_) return absl::OkStatus();
    LOG(INFO) << "Synchronous training ended: closing the token queue so that the other "
                 "workers stop";
    return session->Run({}, {}, {close_token_queue_}, nullptr);
  }

 private:
  SyncReplicasOptimizer* const opt_;
  const bool is_chief_;
  const Operation init_tokens_;
  const Operation close_token_queue_;
  const Output global_step_now_;
  const Output queue_size_;
  const Operation add_token_;
};

// `step`'s value as an int64 when the op runs (after the scope's control dependencies).
Output StepNow(const Scope& scope, const Variable& step) {
  return ops::Cast(scope, ops::Identity(scope, step.ref), DT_INT64);
}

}  // namespace

SyncReplicasOptimizer::SyncReplicasOptimizer(Optimizer* optimizer, int replicas_to_aggregate,
                                             int total_num_replicas)
    : optimizer_(optimizer),
      replicas_to_aggregate_(replicas_to_aggregate),
      total_num_replicas_(total_num_replicas < 0 ? replicas_to_aggregate : total_num_replicas) {}

absl::StatusOr<std::vector<GradAndVar>> SyncReplicasOptimizer::ComputeGradients(
    const Scope& scope, const Output& loss, const std::vector<Variable>& var_list) {
  return optimizer_->ComputeGradients(scope, loss, var_list);
}

absl::StatusOr<Operation> SyncReplicasOptimizer::Minimize(const Scope& scope, const Output& loss,
                                                          const Variable& global_step,
                                                          const std::vector<Variable>& var_list) {
  ASSIGN_OR_RETURN(std::vector<GradAndVar> grads, ComputeGradients(scope, loss, var_list));
  return ApplyGradients(scope, grads, global_step);
}

absl::StatusOr<Operation> SyncReplicasOptimizer::ApplyGradients(
    const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
    const Variable& global_step) {
  if (applied_) {
    return absl::FailedPreconditionError(
        "SyncReplicasOptimizer::ApplyGradients may be called only once");
  }
  if (optimizer_ == nullptr || replicas_to_aggregate_ < 1 || total_num_replicas_ < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("SyncReplicasOptimizer needs an optimizer, replicas_to_aggregate >= 1 and "
                     "total_num_replicas >= 1; got replicas_to_aggregate ",
                     replicas_to_aggregate_, ", total_num_replicas ", total_num_replicas_));
  }
  if (!global_step.valid() ||
      (global_step.dtype() != DT_INT64 && global_step.dtype() != DT_INT32)) {
    return absl::InvalidArgumentError("SyncReplicasOptimizer needs an integer global step");
  }
  applied_ = true;
  graph_ = scope.graph();
  global_step_ = global_step;
  const Scope sync = scope.NewSubScope("sync_replicas");

  // The local step lives on this worker, next to an anchor placed as the scope places
  // ops (TensorFlow colocates it the same way): a device setter would put a variable on
  // a ps, where every worker would share it.
  Operation anchor = ops::NoOp(sync.WithOpName("local_anchor"));
  VariableOptions local;
  local.trainable = false;
  local.collections = {GraphKeys::kLocalVariables};
  local_step_ =
      MakeVariable(sync.ColocateWith(anchor).WithOpName("local_step"),
                   ops::Const(sync.ColocateWith(anchor), Tensor::Scalar<int64_t>(0)), local);
  RETURN_IF_ERROR(scope.status());
  Output global_now =
      ops::Cast(sync.ColocateWith(local_step_.ref),
                ops::Identity(sync.ColocateWith(global_step.ref), global_step.ref), DT_INT64);
  local_step_init_op_ =
      Operation(ops::Assign(sync.ColocateWith(local_step_.ref).WithOpName("local_step_init"),
                            local_step_.ref, global_now)
                    .node());

  std::vector<Operation> applies;
  std::vector<GradAndVar> aggregated;
  std::vector<Operation> set_steps = {local_step_init_op_};
  std::vector<Operation> cancels;
  for (const GradAndVar& gv : grads_and_vars) {
    if (!gv.grad.valid()) continue;
    if (!gv.var.valid()) return absl::InvalidArgumentError("a gradient's variable is invalid");
    const Scope at_var = sync.ColocateWith(gv.var.ref);
    const std::string base = absl::StrCat(gv.var.name(), "/grad_accum");
    ops::ConditionalAccumulatorAttrs attrs;
    attrs.shared_name = base;
    Output accumulator =
        ops::ConditionalAccumulator(at_var.WithOpName(base), gv.var.dtype(), gv.var.shape(), attrs);
    applies.push_back(
        ops::AccumulatorApplyGradient(at_var, accumulator, local_step_.value, gv.grad));
    aggregated.push_back(
        {ops::AccumulatorTakeGradient(
             at_var, accumulator,
             ops::Const(at_var, Tensor::Scalar<int32_t>(replicas_to_aggregate_)), gv.var.dtype()),
         gv.var});
    set_steps.push_back(
        ops::AccumulatorSetGlobalStep(at_var, accumulator, StepNow(at_var, global_step)));
    cancels.push_back(ops::AccumulatorCancelTakes(at_var, accumulator));
  }
  if (applies.empty()) {
    return absl::InvalidArgumentError(
        "SyncReplicasOptimizer: no gradients provided for any variable");
  }
  // The chief aggregates in two steps. The take step waits for the gradients and stages
  // their means in a variable next to each variable (of no collection: never saved nor
  // initialised by a session's init ops; the chief's init sets them), after every take
  // succeeded: a take that fails (cancelled as the chief's session ends, or a ps lost)
  // stages nothing. The update step applies what is staged and never waits, so that a
  // checkpoint's snapshot, which waits for the steps that write the variables, is not
  // held by a take waiting for a gradient (the chief's own, while it saves).
  std::vector<Operation> takes;
  for (const GradAndVar& gv : aggregated) takes.push_back(Operation(gv.grad.node()));
  std::vector<Operation> stages;
  VariableOptions staging;
  staging.trainable = false;
  staging.collections = {};
  for (GradAndVar& gv : aggregated) {
    const Scope at_var = sync.ColocateWith(gv.var.ref);
    Variable staged =
        MakeVariable(at_var.WithOpName(absl::StrCat(gv.var.name(), "/grad_staged")),
                     ops::ZerosLike(at_var, ops::Identity(at_var, gv.var.ref)), staging);
    RETURN_IF_ERROR(scope.status());
    set_steps.push_back(staged.initializer);
    Output after_takes = ops::Identity(at_var.WithControlDependencies(takes), gv.grad);
    stages.push_back(Operation(ops::Assign(at_var, staged.ref, after_takes).node()));
    gv.grad = staged.value;
  }
  take_op_ = ops::Group(sync.WithOpName("take_gradients"), stages);
  RETURN_IF_ERROR(scope.status());

  // The chief's aggregation: the wrapped optimizer applies the means and advances the
  // global step; then one token per replica, each the new global step.
  ASSIGN_OR_RETURN(Operation update,
                   optimizer_->ApplyGradients(sync.WithOpName("update"), aggregated, &global_step));
  const Scope at_step = sync.ColocateWith(global_step.ref);
  ops::FIFOQueueAttrs queue_attrs;
  queue_attrs.shapes = {PartialShape::Scalar()};
  queue_attrs.shared_name = "sync_token_q";
  token_queue_ = ops::FIFOQueue(at_step.WithOpName("sync_token_q"), {DT_INT64}, queue_attrs);
  const int tokens_per_step = std::max(total_num_replicas_, replicas_to_aggregate_);
  const Scope after_update = at_step.WithControlDependencies({update});
  Output tokens = ops::Fill(
      after_update, ops::Const(after_update, Tensor::FromVector<int32_t>({tokens_per_step})),
      StepNow(after_update, global_step));
  sync_op_ = ops::QueueEnqueueMany(after_update.WithOpName("sync_op"), token_queue_, {tokens});

  // The worker's step: its gradients in, then a token out as the new local step.
  const Scope after_applies = at_step.WithControlDependencies(applies);
  Output token = ops::QueueDequeue(after_applies.WithOpName("token"), token_queue_, {DT_INT64})[0];
  Operation train = Operation(
      ops::Assign(sync.ColocateWith(local_step_.ref).WithOpName("train"), local_step_.ref, token)
          .node());

  chief_init_op_ = ops::Group(sync.WithOpName("chief_init"), set_steps);
  Operation cancel_takes = ops::Group(sync.WithOpName("cancel_takes"), cancels);
  close_token_queue_ = ops::QueueClose(at_step.WithOpName("close_token_queue"), token_queue_, true);
  global_step_now_ = StepNow(at_step, global_step);
  queue_size_ = ops::QueueSize(at_step.WithOpName("token_queue_size"), token_queue_);
  add_token_ = ops::QueueEnqueue(at_step.WithOpName("add_token"), token_queue_, {global_step_now_});
  RETURN_IF_ERROR(scope.status());
  ASSIGN_OR_RETURN(chief_queue_runner_,
                   QueueRunner::Create(
                       sync, token_queue_, {take_op_}, cancel_takes, cancel_takes,
                       {absl::StatusCode::kCancelled, absl::StatusCode::kOutOfRange}, {sync_op_}));
  return train;
}

absl::StatusOr<Operation> SyncReplicasOptimizer::GetInitTokensOp(const Scope& scope,
                                                                 int num_tokens) {
  if (!applied_) {
    return absl::InvalidArgumentError("GetInitTokensOp: call ApplyGradients first");
  }
  if (num_tokens < 0) num_tokens = replicas_to_aggregate_;
  const int needed = total_num_replicas_ - replicas_to_aggregate_;
  if (num_tokens < needed) {
    return absl::InvalidArgumentError(
        absl::StrCat("GetInitTokensOp: ", num_tokens, " initial tokens, but ", total_num_replicas_,
                     " replicas aggregating ", replicas_to_aggregate_, " need at least ", needed));
  }
  const Scope at_step = scope.ColocateWith(global_step_.ref);
  Output tokens = ops::Fill(at_step, ops::Const(at_step, Tensor::FromVector<int32_t>({num_tokens})),
                            StepNow(at_step, global_step_));
  Operation op =
      ops::QueueEnqueueMany(at_step.WithOpName("sync_init_tokens"), token_queue_, {tokens});
  RETURN_IF_ERROR(scope.status());
  return op;
}

absl::StatusOr<std::unique_ptr<SessionRunHook>> SyncReplicasOptimizer::MakeSessionRunHook(
    bool is_chief, int num_tokens) {
  if (!applied_) {
    return absl::FailedPreconditionError("MakeSessionRunHook: call ApplyGradients first");
  }
  Operation init_tokens;
  if (is_chief) {
    ASSIGN_OR_RETURN(init_tokens, GetInitTokensOp(Scope::RootScopeFor(graph_), num_tokens));
  }
  return std::unique_ptr<SessionRunHook>(new SyncReplicasHook(
      this, is_chief, init_tokens, close_token_queue_, global_step_now_, queue_size_, add_token_));
}

}  // namespace overseer
