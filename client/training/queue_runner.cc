#include "client/training/queue_runner.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/graph/ops_queue.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

// What the runner's threads use; shared so that the runner may go away first.
struct QueueRunner::Shared {
  QueueRunnerDef def;  // Immutable; queue_closed_exception_types is not used.
  std::vector<absl::StatusCode> closed_codes;

  absl::Mutex mu;
  // Enqueue threads not yet ended (or not yet started), per session.
  std::map<Session*, int> runs_per_session ABSL_GUARDED_BY(mu);
  std::vector<absl::Status> exceptions ABSL_GUARDED_BY(mu);

  bool IsQueueClosed(const absl::Status& status) const {
    return std::find(closed_codes.begin(), closed_codes.end(), status.code()) != closed_codes.end();
  }

  absl::Status RunOp(Session* session, const std::string& op) {
    return session->Run(RunOptions(), {}, {}, {op}, nullptr, nullptr);
  }

  // An enqueue thread: runs `op` until the queue is closed, it fails or `coord` stops.
  void RunEnqueue(Session* session, const std::string& op, Coordinator* coord) {
    absl::Status error;
    while (coord == nullptr || !coord->ShouldStop()) {
      std::string failed = op;
      absl::Status status = RunOp(session, op);
      for (int i = 0; status.ok() && i < def.then_op_name_size(); ++i) {
        failed = def.then_op_name(i);
        status = RunOp(session, failed);
      }
      if (status.ok()) continue;
      if (!IsQueueClosed(status)) {
        error =
            absl::Status(status.code(), absl::StrCat("QueueRunner for queue '", def.queue_name(),
                                                     "', ", failed == op ? "enqueue op '" : "op '",
                                                     failed, "': ", status.message()));
      }
      break;
    }
    if (!error.ok()) Report(error, coord);
    absl::MutexLock lock(&mu);
    if (--runs_per_session[session] > 0) return;
    runs_per_session.erase(session);
    // The last enqueue thread closes the queue so that dequeuers see the end of input.
    // Under the lock, so that threads created meanwhile for this session do not start
    // on a queue about to be closed.
    absl::Status closed = RunOp(session, def.close_op_name());
    if (!closed.ok()) {
      LOG(INFO) << "QueueRunner for queue '" << def.queue_name() << "': ignored an error of "
                << "its close op: " << closed;
    }
  }

  void Report(const absl::Status& error, Coordinator* coord) {
    if (coord != nullptr) {
      // Not OK only when the coordinator was joined already and cannot report it.
      if (coord->RequestStop(error).ok()) return;
    }
    LOG(ERROR) << "Error in QueueRunner thread: " << error;
    absl::MutexLock lock(&mu);
    exceptions.push_back(error);
  }

  // The close-on-stop thread: cancels pending enqueues once the coordinator stops.
  void CloseOnStop(Session* session, Coordinator* coord) {
    coord->WaitForStop();
    absl::Status status = RunOp(session, def.cancel_op_name());
    if (!status.ok()) {
      LOG(INFO) << "QueueRunner for queue '" << def.queue_name() << "': ignored an error of "
                << "its cancel op: " << status;
    }
  }
};

namespace {

absl::Status CheckInGraph(const ClientGraph* graph, const Operation& op, const std::string& what,
                          const std::string& queue) {
  if (!op.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("QueueRunner for queue '", queue, "': the ", what, " is null"));
  }
  if (op.node()->graph() != graph) {
    return absl::InvalidArgumentError(absl::StrCat("QueueRunner for queue '", queue, "': the ",
                                                   what, " '", op.name(),
                                                   "' belongs to another graph than the queue"));
  }
  return absl::OkStatus();
}

absl::Status CheckCodes(const std::vector<absl::StatusCode>& codes, const std::string& queue) {
  if (codes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("QueueRunner for queue '", queue, "': queue_closed_codes must not be empty"));
  }
  for (absl::StatusCode code : codes) {
    const int value = static_cast<int>(code);
    if (code == absl::StatusCode::kOk || value < 0 ||
        value > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
      return absl::InvalidArgumentError(absl::StrCat("QueueRunner for queue '", queue, "': ", value,
                                                     " is not an error code for a closed queue"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<QueueRunner>> QueueRunner::Create(
    const Scope& scope, Output queue, const std::vector<Operation>& enqueue_ops, Operation close_op,
    Operation cancel_op, std::vector<absl::StatusCode> queue_closed_codes,
    const std::vector<Operation>& then_ops) {
  RETURN_IF_ERROR(scope.status());
  if (!queue.valid()) return absl::InvalidArgumentError("QueueRunner needs a queue, got null");
  ClientGraph* graph = queue.node()->graph();
  const std::string& queue_name = queue.node()->name();
  if (scope.graph() != graph) {
    return absl::InvalidArgumentError(absl::StrCat(
        "QueueRunner for queue '", queue_name, "': the scope is of another graph than the queue"));
  }
  if (enqueue_ops.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("QueueRunner for queue '", queue_name, "' needs at least one enqueue op"));
  }
  for (const Operation& op : enqueue_ops) {
    RETURN_IF_ERROR(CheckInGraph(graph, op, "enqueue op", queue_name));
  }
  for (const Operation& op : then_ops) {
    RETURN_IF_ERROR(CheckInGraph(graph, op, "then op", queue_name));
  }
  RETURN_IF_ERROR(CheckCodes(queue_closed_codes, queue_name));
  const size_t slash = queue_name.rfind('/');
  const std::string name_scope = slash == std::string::npos ? "" : queue_name.substr(0, slash);
  const std::string base = queue_name.substr(slash == std::string::npos ? 0 : slash + 1);
  const Scope next_to_queue = scope.WithNameScope(name_scope).ColocateWith(queue);
  if (!close_op.valid()) {
    close_op = ops::QueueClose(next_to_queue.WithOpName(base + "_Close"), queue);
    RETURN_IF_ERROR(scope.status());
  }
  if (!cancel_op.valid()) {
    cancel_op = ops::QueueClose(next_to_queue.WithOpName(base + "_Cancel"), queue,
                                /*cancel_pending_enqueues=*/true);
    RETURN_IF_ERROR(scope.status());
  }
  RETURN_IF_ERROR(CheckInGraph(graph, close_op, "close op", queue_name));
  RETURN_IF_ERROR(CheckInGraph(graph, cancel_op, "cancel op", queue_name));

  auto shared = std::make_shared<Shared>();
  shared->def.set_queue_name(queue_name);
  for (const Operation& op : enqueue_ops) shared->def.add_enqueue_op_name(op.name());
  for (const Operation& op : then_ops) shared->def.add_then_op_name(op.name());
  shared->def.set_close_op_name(close_op.name());
  shared->def.set_cancel_op_name(cancel_op.name());
  shared->closed_codes = std::move(queue_closed_codes);
  return std::unique_ptr<QueueRunner>(new QueueRunner(std::move(shared)));
}

absl::StatusOr<std::unique_ptr<QueueRunner>> QueueRunner::FromProto(const QueueRunnerDef& def) {
  const std::string& queue = def.queue_name();
  if (queue.empty()) return absl::InvalidArgumentError("QueueRunnerDef has no queue_name");
  if (def.enqueue_op_name().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("QueueRunnerDef for queue '", queue, "' has no enqueue_op_name"));
  }
  if (def.close_op_name().empty() || def.cancel_op_name().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "QueueRunnerDef for queue '", queue, "' needs both close_op_name and cancel_op_name"));
  }
  std::vector<absl::StatusCode> codes;
  for (int code : def.queue_closed_exception_types()) {
    codes.push_back(static_cast<absl::StatusCode>(code));
  }
  if (codes.empty()) codes.push_back(absl::StatusCode::kOutOfRange);
  RETURN_IF_ERROR(CheckCodes(codes, queue));
  auto shared = std::make_shared<Shared>();
  shared->def = def;
  shared->closed_codes = std::move(codes);
  return std::unique_ptr<QueueRunner>(new QueueRunner(std::move(shared)));
}

QueueRunnerDef QueueRunner::ToProto() const {
  QueueRunnerDef def = shared_->def;
  def.clear_queue_closed_exception_types();
  for (absl::StatusCode code : shared_->closed_codes) {
    def.add_queue_closed_exception_types(static_cast<int>(code));
  }
  return def;
}

const std::string& QueueRunner::name() const { return shared_->def.queue_name(); }

std::vector<std::string> QueueRunner::enqueue_op_names() const {
  return {shared_->def.enqueue_op_name().begin(), shared_->def.enqueue_op_name().end()};
}

std::vector<std::string> QueueRunner::then_op_names() const {
  return {shared_->def.then_op_name().begin(), shared_->def.then_op_name().end()};
}

const std::string& QueueRunner::close_op_name() const { return shared_->def.close_op_name(); }

const std::string& QueueRunner::cancel_op_name() const { return shared_->def.cancel_op_name(); }

std::vector<absl::StatusCode> QueueRunner::queue_closed_codes() const {
  return shared_->closed_codes;
}

std::vector<absl::Status> QueueRunner::exceptions_raised() const {
  absl::MutexLock lock(&shared_->mu);
  return shared_->exceptions;
}

absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> QueueRunner::CreateThreads(
    Session* session, Coordinator* coord, bool start) {
  if (session == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("QueueRunner for queue '", name(),
                                                   "': CreateThreads needs a session, got null"));
  }
  const QueueRunnerDef& def = shared_->def;
  {
    absl::MutexLock lock(&shared_->mu);
    auto it = shared_->runs_per_session.find(session);
    if (it != shared_->runs_per_session.end() && it->second > 0) {
      return std::vector<std::shared_ptr<ManagedThread>>();
    }
    shared_->runs_per_session[session] = def.enqueue_op_name_size();
    shared_->exceptions.clear();
  }
  const std::string prefix = absl::StrCat("QueueRunnerThread-", def.queue_name(), "-");
  std::vector<std::shared_ptr<ManagedThread>> threads;
  for (const std::string& op : def.enqueue_op_name()) {
    threads.push_back(ManagedThread::Create(prefix + op, [shared = shared_, session, op, coord] {
      shared->RunEnqueue(session, op, coord);
    }));
  }
  if (coord != nullptr) {
    threads.push_back(ManagedThread::Create(
        prefix + "close_on_stop",
        [shared = shared_, session, coord] { shared->CloseOnStop(session, coord); }));
  }
  for (const std::shared_ptr<ManagedThread>& thread : threads) {
    if (coord != nullptr) coord->RegisterThread(thread);
    if (start) thread->Start();
  }
  return threads;
}

absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> QueueRunner::CreateThreads(
    ClientSession* session, Coordinator* coord, bool start) {
  if (session == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("QueueRunner for queue '", name(),
                                                   "': CreateThreads needs a session, got null"));
  }
  RETURN_IF_ERROR(session->ExtendIfNeeded());
  return CreateThreads(session->session(), coord, start);
}

void AddQueueRunner(ClientGraph* graph, const QueueRunner& runner, const std::string& collection) {
  graph->AddToCollection(collection, runner.ToProto().SerializeAsString());
}

absl::StatusOr<std::vector<std::unique_ptr<QueueRunner>>> QueueRunnersInGraph(
    const ClientGraph& graph, const std::string& collection) {
  std::vector<std::unique_ptr<QueueRunner>> runners;
  const std::vector<std::string> entries = graph.GetCollection(collection);
  for (size_t i = 0; i < entries.size(); ++i) {
    QueueRunnerDef def;
    if (!def.ParseFromString(entries[i])) {
      return absl::InvalidArgumentError(absl::StrCat("entry ", i, " of collection '", collection,
                                                     "' is not a serialized QueueRunnerDef"));
    }
    absl::StatusOr<std::unique_ptr<QueueRunner>> runner = QueueRunner::FromProto(def);
    if (!runner.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("entry ", i, " of collection '", collection,
                                                     "': ", runner.status().message()));
    }
    std::vector<std::string> names = {def.queue_name(), def.close_op_name(), def.cancel_op_name()};
    names.insert(names.end(), def.enqueue_op_name().begin(), def.enqueue_op_name().end());
    names.insert(names.end(), def.then_op_name().begin(), def.then_op_name().end());
    for (const std::string& name : names) {
      if (graph.FindNode(name) == nullptr) {
        return absl::NotFoundError(absl::StrCat("the queue runner for queue '", def.queue_name(),
                                                "' in collection '", collection, "' names op '",
                                                name, "', which is not in the graph"));
      }
    }
    runners.push_back(*std::move(runner));
  }
  return runners;
}

absl::StatusOr<StartedQueueRunners> StartQueueRunners(Session* session, const ClientGraph& graph,
                                                      Coordinator* coord,
                                                      const StartQueueRunnersOptions& options) {
  if (session == nullptr) {
    return absl::InvalidArgumentError("StartQueueRunners needs a session, got null");
  }
  StartedQueueRunners started;
  ASSIGN_OR_RETURN(started.runners, QueueRunnersInGraph(graph, options.collection));
  for (const std::unique_ptr<QueueRunner>& runner : started.runners) {
    // Cannot fail: the session is not null.
    ASSIGN_OR_RETURN(std::vector<std::shared_ptr<ManagedThread>> threads,
                     runner->CreateThreads(session, coord, options.start));
    started.threads.insert(started.threads.end(), threads.begin(), threads.end());
  }
  return started;
}

absl::StatusOr<StartedQueueRunners> StartQueueRunners(ClientSession* session, Coordinator* coord,
                                                      const StartQueueRunnersOptions& options) {
  if (session == nullptr) {
    return absl::InvalidArgumentError("StartQueueRunners needs a session, got null");
  }
  RETURN_IF_ERROR(session->ExtendIfNeeded());
  return StartQueueRunners(session->session(), *session->graph(), coord, options);
}

}  // namespace overseer
