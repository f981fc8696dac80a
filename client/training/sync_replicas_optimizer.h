#ifndef OVERSEER_CLIENT_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_
#define OVERSEER_CLIENT_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_

// Synchronous data-parallel training, TensorFlow's tf.train.SyncReplicasOptimizer:
//
//   AdamOptimizer adam;
//   SyncReplicasOptimizer sync(&adam, /*replicas_to_aggregate=*/2, /*total_num_replicas=*/2);
//   ASSIGN_OR_RETURN(Operation train, sync.Minimize(scope, loss, global_step));
//   std::unique_ptr<SessionRunHook> hook = sync.MakeSessionRunHook(is_chief);
//   // MonitoredTrainingSession with the hook; every worker runs `train`.
//
// Each worker's train op adds its gradients to one ConditionalAccumulator per variable
// (on the variable's ps, shared by name by every worker), tagged with the worker's local
// step, then waits for a token from the token queue (on the global step's ps) and takes
// the token's global step as its new local step. The chief runs, in a thread of the
// hook, the aggregation: take the mean of `replicas_to_aggregate` gradients from every
// accumulator, apply it with the wrapped optimizer (which advances the global step),
// and put one token per replica in the queue. A gradient computed from variables older
// than the global step is stale and dropped by its accumulator, so every update applies
// the mean of exactly `replicas_to_aggregate` gradients of the current variables.
//
// Beyond TensorFlow: a worker that dies while sending its gradients leaves them in some
// accumulators only, and the others would wait forever for a gradient that the
// surviving workers, all waiting for a token, never send (TensorFlow's chief hangs
// there); the chief's watchdog adds a token when no update happened for 5 s and none is
// left, which lets a survivor send a fresh gradient. When the chief's session ends, the aggregation
// thread's waiting takes are cancelled (it does not stay blocked), and on a clean end the chief
// closes the token queue, so non-chiefs waiting for a token end their training with OUT_OF_RANGE (a
// clean stop for MonitoredSession) instead of hanging. Gradients with a sparse form
// (indexed_slices.h) are aggregated dense.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/optimizers.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"
#include "client/training/queue_runner.h"
#include "client/training/session_run_hook.h"

namespace overseer {

class SyncReplicasOptimizer {
 public:
  // `optimizer` (not owned, must outlive this) applies the aggregated gradients.
  // total_num_replicas -1 means replicas_to_aggregate. Bad counts are reported by
  // ApplyGradients.
  SyncReplicasOptimizer(Optimizer* optimizer, int replicas_to_aggregate,
                        int total_num_replicas = -1);
  SyncReplicasOptimizer(const SyncReplicasOptimizer&) = delete;
  SyncReplicasOptimizer& operator=(const SyncReplicasOptimizer&) = delete;

  // The wrapped optimizer's.
  absl::StatusOr<std::vector<GradAndVar>> ComputeGradients(
      const Scope& scope, const Output& loss, const std::vector<Variable>& var_list = {});

  // The worker's train op (see above). Builds, once per optimizer (FAILED_PRECONDITION
  // on a second call), the accumulators, the token queue, the local step (a local
  // variable on the worker), the chief's aggregation op and the init ops below.
  // INVALID_ARGUMENT unless 1 <= replicas_to_aggregate and total_num_replicas >= 1, or
  // for an invalid global step; the wrapped optimizer's errors.
  absl::StatusOr<Operation> ApplyGradients(const Scope& scope,
                                           const std::vector<GradAndVar>& grads_and_vars,
                                           const Variable& global_step);
  absl::StatusOr<Operation> Minimize(const Scope& scope, const Output& loss,
                                     const Variable& global_step,
                                     const std::vector<Variable>& var_list = {});

  // The op that enqueues `num_tokens` tokens of the current global step (-1:
  // replicas_to_aggregate), which the chief runs at the start of each session so that
  // workers can make their first steps. INVALID_ARGUMENT if fewer than
  // total_num_replicas - replicas_to_aggregate (the workers could wait forever), or
  // before ApplyGradients.
  absl::StatusOr<Operation> GetInitTokensOp(const Scope& scope, int num_tokens = -1);

  // The session hook: after each session's creation it sets the local step to the global
  // step (the chief also sets every accumulator's step, puts the initial tokens in the
  // queue and starts the aggregation thread and the watchdog on the session's
  // coordinator); at the end
  // the chief closes the token queue. Put it before hooks whose End waits for other
  // workers. FAILED_PRECONDITION before ApplyGradients; GetInitTokensOp's errors.
  absl::StatusOr<std::unique_ptr<SessionRunHook>> MakeSessionRunHook(bool is_chief,
                                                                     int num_tokens = -1);

  // Valid after ApplyGradients.
  const Variable& local_step() const { return local_step_; }
  Operation local_step_init_op() const { return local_step_init_op_; }
  // The local step's init, and every accumulator's step set to the global step.
  Operation chief_init_op() const { return chief_init_op_; }
  // The chief's aggregation, two steps: take_op waits for replicas_to_aggregate fresh
  // gradients per variable and stages their means; sync_op applies them, advances the
  // global step and enqueues the tokens, without waiting (so that a checkpoint's
  // snapshot never waits for a take: core/graph/update_gate.h). TensorFlow has one.
  Operation take_op() const { return take_op_; }
  Operation sync_op() const { return sync_op_; }
  Output token_queue() const { return token_queue_; }
  // Runs take_op then sync_op in a loop; its close and cancel ops cancel the
  // accumulators' takes.
  QueueRunner* chief_queue_runner() const { return chief_queue_runner_.get(); }
  int replicas_to_aggregate() const { return replicas_to_aggregate_; }
  int total_num_replicas() const { return total_num_replicas_; }

 private:
  Optimizer* const optimizer_;
  const int replicas_to_aggregate_;
  const int total_num_replicas_;
  bool applied_ = false;
  ClientGraph* graph_ = nullptr;
  Variable global_step_;
  Variable local_step_;
  Operation local_step_init_op_;
  Operation chief_init_op_;
  Operation take_op_;
  Operation sync_op_;
  Operation close_token_queue_;
  Output token_queue_;
  // The chief's watchdog: the global step now, the tokens waiting, one more token.
  Output global_step_now_;
  Output queue_size_;
  Operation add_token_;
  std::unique_ptr<QueueRunner> chief_queue_runner_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_
