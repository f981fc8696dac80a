#ifndef OVERSEER_CLIENT_SESSION_SESSION_H_
#define OVERSEER_CLIENT_SESSION_SESSION_H_

// The Session interface: runs a GraphDef's nodes given feeds. Implementations:
// DirectSession (target "", in-process) and, later, GrpcSession (grpc://host:port).
// One conformance suite (session_conformance.h) runs against every implementation.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "proto/config.pb.h"
#include "proto/graph.pb.h"
#include "proto/worker.pb.h"

namespace overseer {

class Clock;
class ResourceMgr;

struct SessionOptions {
  // "" (in-process DirectSession) or "grpc://host:port".
  std::string target;
  ConfigProto config;
  // Where variables and queues live for DirectSession; nullptr means the process-wide
  // ResourceMgr::Default(), shared by every session of the process.
  ResourceMgr* resource_mgr = nullptr;
  // Measures step timeouts, kernels' deadlines and the RPC deadlines and retries of a
  // grpc:// session; nullptr means the real clock (Clock::Real()). Not owned; must
  // outlive the session.
  Clock* clock = nullptr;
};

// Names a callable within its session (Session::MakeCallable).
using CallableHandle = int64_t;

// A session holds one graph that grows by Extend. Run is thread-safe (steps run
// concurrently); Create, Extend and Close are serialised against each other.
class Session {
 public:
  virtual ~Session() = default;

  // Sets the graph. Validates it (unknown ops, bad attrs, dtype mismatches, dangling
  // inputs, cycles: INVALID_ARGUMENT naming the node). FAILED_PRECONDITION if a graph
  // is already set or the session is closed.
  virtual absl::Status Create(const GraphDef& graph) = 0;

  // Adds nodes to the graph (names must be new). Validated as Create does.
  virtual absl::Status Extend(const GraphDef& graph) = 0;

  // Runs one step: computes `fetches` (tensor names "node:k" or "node") and runs
  // `targets` (node names), feeding `feeds` ("node:k" -> value) instead of computing
  // those tensors. `outputs` receives one tensor per fetch, in order. Errors name the
  // node and op; a missing feed for a Placeholder is INVALID_ARGUMENT; a step that
  // exceeds options.timeout_in_ms is cancelled and fails DEADLINE_EXCEEDED.
  // `outputs` may be null when there are no fetches; `metadata` may be null.
  virtual absl::Status Run(const RunOptions& options,
                           const std::vector<std::pair<std::string, Tensor>>& feeds,
                           const std::vector<std::string>& fetches,
                           const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                           RunMetadata* metadata) = 0;

  // Run with default options and no metadata.
  absl::Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }

  // Callables (TensorFlow's Session::MakeCallable): the signature of `options` (feeds,
  // fetches, targets) is checked, pruned and prepared once; RunCallable then runs it
  // with the feed values given by position. Returns a handle valid until
  // ReleaseCallable or Close. Unknown names and unfed placeholders are
  // INVALID_ARGUMENT naming them, as in Run; FAILED_PRECONDITION before Create and
  // after Close.
  virtual absl::StatusOr<CallableHandle> MakeCallable(const CallableOptions& options) = 0;

  // Runs a callable: `feeds` holds one value per options.feed, in order, checked as Run
  // checks feeds; `fetches` (may be null without fetches) receives one tensor per
  // options.fetch. options.run_options applies to every run (timeout; with a trace
  // level, step stats go to `metadata`, which may be null). INVALID_ARGUMENT for a
  // handle that was released or never made, or for a number of feeds other than
  // options.feed_size(). Thread-safe: a callable may run on several threads at once.
  virtual absl::Status RunCallable(CallableHandle handle, const std::vector<Tensor>& feeds,
                                   std::vector<Tensor>* fetches, RunMetadata* metadata) = 0;

  // Forgets a callable. OK for a handle already released; INVALID_ARGUMENT for one this
  // session never made.
  virtual absl::Status ReleaseCallable(CallableHandle handle) = 0;

  // Partial runs (TensorFlow's partial_run_setup and partial_run): one step whose feeds
  // are given and whose fetches are taken over several calls. PartialRunSetup prunes
  // the graph for all of `feeds`, `fetches` and `targets` (errors as Run's) and starts
  // the step; nodes run as soon as the feeds they need arrive. Each PartialRun feeds
  // some of the setup's feeds and returns some of its fetches (`outputs`, one per
  // fetch, in order). INVALID_ARGUMENT naming the tensor for a feed or fetch that the
  // setup did not name, one already fed or fetched, and a fetch that needs a feed not
  // yet given (it could never be computed); for an unknown or finished handle. The step
  // ends, and the handle with it, on the call that gives the last feed and takes the
  // last fetch: that call returns once the targets have run too. A kernel error ends
  // the step and is returned by the call that sees it. Close cancels unfinished partial
  // runs. The default implementation returns UNIMPLEMENTED.
  virtual absl::StatusOr<std::string> PartialRunSetup(const std::vector<std::string>& feeds,
                                                      const std::vector<std::string>& fetches,
                                                      const std::vector<std::string>& targets);
  virtual absl::Status PartialRun(const std::string& handle,
                                  const std::vector<std::pair<std::string, Tensor>>& feeds,
                                  const std::vector<std::string>& fetches,
                                  std::vector<Tensor>* outputs);

  // Releases the session's resources (not the shared variables and queues) and its
  // callables. Later calls other than Close fail FAILED_PRECONDITION; a second Close
  // is OK.
  virtual absl::Status Close() = 0;

  // The devices the session can run on (TensorFlow's list_devices): the process's CPU
  // ("/job:localhost/replica:0/task:0/device:CPU:0") in-process, every task's through
  // a master. FAILED_PRECONDITION after Close.
  virtual absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() = 0;

  // TensorFlow's Session::Reset: clears `containers` (every container when empty) of
  // the variables and queues the session uses, wherever they live, for every session
  // that shares them, and closes this session (through a master, as TensorFlow's,
  // every session of the master). FAILED_PRECONDITION after Close.
  virtual absl::Status Reset(const std::vector<std::string>& containers) = 0;
};

// The errors every implementation gives alike: FAILED_PRECONDITION for a call on a
// closed session, and for a Run (or callable) while the graph has no node (TensorFlow:
// "The Session graph is empty.").
absl::Status SessionClosedError();
absl::Status EmptyGraphError();

// Creates a session for `options.target`: "" gives a DirectSession, a registered
// scheme ("grpc://") its implementation. NOT_FOUND (as TensorFlow's lookup of a
// session factory) naming the target and the known schemes for anything else.
absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options);

// Registers the implementation for targets starting with `prefix` (e.g. "grpc://").
// Called from a static initialiser of the implementing library. Thread-safe.
using SessionFactory =
    std::function<absl::StatusOr<std::unique_ptr<Session>>(const SessionOptions&)>;
void RegisterSessionFactory(const std::string& prefix, SessionFactory factory);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_SESSION_H_
