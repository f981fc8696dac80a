#ifndef OVERSEER_CLIENT_TRAINING_SESSION_RUN_HOOK_H_
#define OVERSEER_CLIENT_TRAINING_SESSION_RUN_HOOK_H_

// SessionRunHook: TensorFlow's tf.train.SessionRunHook. A hook extends the runs of a
// monitored session: before each run it may ask for more tensors, feeds and run
// options (SessionRunArgs); after the run it gets what it asked for
// (SessionRunValues) and may ask the session to stop. The session calls, in order:
//
//   Begin(scope)                      once, before the graph is used: add or look up nodes
//   AfterCreateSession(session, coord) after every (re)creation of the session
//   BeforeRun(context) / AfterRun(context, values)   around every run
//   End(session)                       once, at a clean end of training only
//
// Every method returns a status; an error ends the run (or the training) with it.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "core/tensor.h"
#include "proto/config.pb.h"

namespace overseer {

class Coordinator;

// A tensor to fetch: an Output of the session's graph, or a tensor name ("node:k", or
// "node" for the only output of a single-output node) resolved when the run is made.
class Fetch {
 public:
  Fetch() = default;                                   // A null Output.
  Fetch(Output output) : output_(output) {}            // NOLINT: implicit by design
  Fetch(std::string name) : name_(std::move(name)) {}  // NOLINT
  Fetch(const char* name) : name_(name) {}             // NOLINT

  // The Output, or the graph's tensor `name`. NOT_FOUND naming the tensor if the graph
  // has none; INVALID_ARGUMENT for a null Output, an Output of another graph, or a
  // bare node name of a node with several outputs.
  absl::StatusOr<Output> Resolve(const ClientGraph& graph) const;
  // The tensor's name ("node:k"), or the name given.
  std::string DebugName() const;

 private:
  Output output_;
  std::string name_;
};

// What a hook asks the next run for, or what the caller asked (original_args).
struct SessionRunArgs {
  // Results come back in SessionRunValues::results, one per fetch, in this order.
  std::vector<Fetch> fetches;
  // Operations to run as well (no results).
  std::vector<Operation> targets;
  // Tensors to feed. A tensor may be fed by one party only (the caller or one hook).
  std::vector<FeedPair> feeds;
  // Merged into the run's options: trace_level, timeout_in_ms and inter_op_thread_pool
  // each take the largest value asked for (TensorFlow's rule).
  RunOptions options;
};

// Passed to BeforeRun and AfterRun of one run. Not thread-safe; lives for the run.
class SessionRunContext {
 public:
  SessionRunContext(SessionRunArgs original_args, ClientSession* session)
      : original_args_(std::move(original_args)), session_(session) {}

  // What the caller of the run asked for (without the hooks' additions).
  const SessionRunArgs& original_args() const { return original_args_; }
  // The session the run goes to; hooks may run it themselves (e.g. to re-read a value).
  ClientSession* session() const { return session_; }

  // Asks the session to stop after this run: its should-stop flag becomes true.
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  const SessionRunArgs original_args_;
  ClientSession* const session_;
  bool stop_requested_ = false;
};

// What AfterRun gets.
struct SessionRunValues {
  // One tensor per fetch of the hook's SessionRunArgs, in order.
  std::vector<Tensor> results;
  // The options the run was made with (the caller's merged with every hook's).
  RunOptions options;
  // The run's metadata (step stats when a trace level was asked for).
  RunMetadata run_metadata;
};

// The base class of hooks; every method does nothing by default. A hook is used by one
// session at a time, from the thread that runs it.
class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;

  // Called once before the session is created. The hook may look up nodes of
  // `scope`'s graph and add new ones (TensorFlow's hooks use the default graph here).
  virtual absl::Status Begin(const Scope& /*scope*/) { return absl::OkStatus(); }

  // Called after the session is created, and again after each recreation (recovery).
  // `coord` is the session's coordinator, or null where there is none.
  virtual absl::Status AfterCreateSession(ClientSession* /*session*/, Coordinator* /*coord*/) {
    return absl::OkStatus();
  }

  // Called before each run; returns what to add to it (empty args: nothing).
  virtual absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* /*context*/) {
    return SessionRunArgs();
  }

  // Called after each successful run with the results of this hook's fetches.
  virtual absl::Status AfterRun(SessionRunContext* /*context*/,
                                const SessionRunValues& /*values*/) {
    return absl::OkStatus();
  }

  // Called once at the end of training, only when it ends without an error (stop
  // requested, end of input). The session may still be run.
  virtual absl::Status End(ClientSession* /*session*/) { return absl::OkStatus(); }
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SESSION_RUN_HOOK_H_
