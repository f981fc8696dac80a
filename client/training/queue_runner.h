#ifndef OVERSEER_CLIENT_TRAINING_QUEUE_RUNNER_H_
#define OVERSEER_CLIENT_TRAINING_QUEUE_RUNNER_H_

// QueueRunner: TensorFlow's tf.train.QueueRunner in C++ form. It holds a queue's
// enqueue ops and runs each in its own thread, in a loop, until the queue is closed,
// an op fails or the Coordinator stops:
//   - ops given as `then_ops` run after each successful run of an enqueue op, in
//     order, each as its own step, on the same thread; they fail as it does;
//   - an enqueue op failing with a "queue closed" code (OUT_OF_RANGE by default: an
//     input queue it dequeues from was closed and drained) ends its thread cleanly;
//   - any other error ends its thread and is reported to the coordinator with
//     RequestStop (without a coordinator it is kept in exceptions_raised());
//   - when the last enqueue thread of a session ends, for whatever reason, it runs the
//     close op, so that dequeuers see the end of input (OUT_OF_RANGE) instead of
//     waiting forever;
//   - with a coordinator, one more thread waits for the stop and then runs the cancel
//     op (close and cancel pending enqueues), which wakes enqueue threads blocked on a
//     full queue so that Join finds them ended.
// The runner only runs ops by name through the Session interface, so it works on
// DirectSession and GrpcSession alike.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<QueueRunner> runner,
//                    QueueRunner::Create(scope, queue, {enqueue}));
//   AddQueueRunner(scope.graph(), *runner);  // For StartQueueRunners.
//   Coordinator coord;
//   ASSIGN_OR_RETURN(auto threads, runner->CreateThreads(session.get(), &coord));
//   ... train, dequeuing from `queue` ...
//   coord.RequestStop();
//   RETURN_IF_ERROR(coord.Join());

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "client/session/session.h"
#include "client/training/coordinator.h"
#include "client/training/managed_thread.h"
#include "proto/queue_runner.pb.h"

namespace overseer {

// Thread-safe. The runner may be destroyed while its threads run (they share what
// they use with it); the session and the coordinator given to CreateThreads must
// outlive the threads (Coordinator::Join them, or destroy the coordinator, before
// closing or destroying the session).
class QueueRunner {
 public:
  // A runner for `queue`'s `enqueue_ops`. A null `close_op` / `cancel_op` is created
  // in the queue's name scope of `scope`'s graph, colocated with the queue:
  // QueueClose(queue) named "<queue>_Close" and QueueClose(queue,
  // cancel_pending_enqueues=true) named "<queue>_Cancel". `queue_closed_codes` lists
  // the enqueue errors that mean the queue was closed (not OK; typically OUT_OF_RANGE,
  // plus CANCELLED when enqueue ops dequeue from other queues). INVALID_ARGUMENT for a
  // null queue, no or null enqueue ops, ops of another graph, OK or no closed codes;
  // the scope's recorded error if building the close ops failed.
  static absl::StatusOr<std::unique_ptr<QueueRunner>> Create(
      const Scope& scope, Output queue, const std::vector<Operation>& enqueue_ops,
      Operation close_op = Operation(), Operation cancel_op = Operation(),
      std::vector<absl::StatusCode> queue_closed_codes = {absl::StatusCode::kOutOfRange},
      const std::vector<Operation>& then_ops = {});

  // A runner from its description (TensorFlow's QueueRunner.from_proto). Names are not
  // checked against any graph: an op that does not exist fails when run. No closed
  // codes means OUT_OF_RANGE (descriptions written before the field existed).
  // INVALID_ARGUMENT for an empty queue, close or cancel op name, no enqueue ops, or
  // a code that is OK or not an absl::StatusCode.
  static absl::StatusOr<std::unique_ptr<QueueRunner>> FromProto(const QueueRunnerDef& def);
  QueueRunnerDef ToProto() const;

  // The queue op's name (TensorFlow's QueueRunner.name).
  const std::string& name() const;
  std::vector<std::string> enqueue_op_names() const;
  std::vector<std::string> then_op_names() const;
  const std::string& close_op_name() const;
  const std::string& cancel_op_name() const;
  std::vector<absl::StatusCode> queue_closed_codes() const;

  // Creates one thread per enqueue op running it on `session`, plus, with a
  // coordinator, the thread that runs the cancel op on stop; all are registered with
  // `coord` and, if `start`, started. Threads are named
  // "QueueRunnerThread-<queue>-<enqueue op>" and "QueueRunnerThread-<queue>-close_on_stop".
  // If threads created earlier for this session are still running (or were never
  // started), no threads are created and an empty list is returned. Creating threads
  // clears exceptions_raised(). Without a coordinator the caller joins the threads:
  // dropping the last reference to a running ManagedThread blocks until it ends.
  // INVALID_ARGUMENT for a null session. The ClientSession form first sends the
  // graph's new nodes to the session (its errors are returned).
  absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> CreateThreads(
      Session* session, Coordinator* coord = nullptr, bool start = true);
  absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> CreateThreads(
      ClientSession* session, Coordinator* coord = nullptr, bool start = true);

  // The errors that ended enqueue threads created without a coordinator (with one they
  // go to the coordinator instead, except those reported after it was joined), since
  // the last CreateThreads that created threads.
  std::vector<absl::Status> exceptions_raised() const;

 private:
  struct Shared;

  explicit QueueRunner(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  const std::shared_ptr<Shared> shared_;
};

// Adds `runner`'s description to `collection` of `graph` (TensorFlow's
// add_queue_runner), where StartQueueRunners finds it.
void AddQueueRunner(ClientGraph* graph, const QueueRunner& runner,
                    const std::string& collection = GraphKeys::kQueueRunners);

// The runners described in `collection` of `graph`, in order. INVALID_ARGUMENT naming
// the collection and entry for an entry that does not parse or is invalid, NOT_FOUND
// naming the runner and the op for an op that is not in the graph.
absl::StatusOr<std::vector<std::unique_ptr<QueueRunner>>> QueueRunnersInGraph(
    const ClientGraph& graph, const std::string& collection = GraphKeys::kQueueRunners);

struct StartQueueRunnersOptions {
  // Create the threads without starting them.
  bool start = true;
  std::string collection = GraphKeys::kQueueRunners;
};

// What StartQueueRunners started: the runners it rebuilt from the graph (for their
// exceptions_raised) and all their threads (already registered with the coordinator).
struct StartedQueueRunners {
  std::vector<std::unique_ptr<QueueRunner>> runners;
  std::vector<std::shared_ptr<ManagedThread>> threads;
};

// TensorFlow's start_queue_runners: rebuilds every runner of the graph's collection
// and creates (and starts) its threads on `session`. The runners are new objects, so
// each call creates new threads. Errors: INVALID_ARGUMENT for a null session, those of
// QueueRunnersInGraph and CreateThreads. The ClientSession form uses its graph.
absl::StatusOr<StartedQueueRunners> StartQueueRunners(ClientSession* session,
                                                      Coordinator* coord = nullptr,
                                                      const StartQueueRunnersOptions& options = {});
absl::StatusOr<StartedQueueRunners> StartQueueRunners(Session* session, const ClientGraph& graph,
                                                      Coordinator* coord = nullptr,
                                                      const StartQueueRunnersOptions& options = {});

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_QUEUE_RUNNER_H_
