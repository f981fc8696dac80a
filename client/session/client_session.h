#ifndef OVERSEER_CLIENT_SESSION_CLIENT_SESSION_H_
#define OVERSEER_CLIENT_SESSION_CLIENT_SESSION_H_

// ClientSession: runs Outputs and Operations of a Scope's graph in a Session. It
// creates the session with the graph at the first Run and, before each later Run,
// extends it with the nodes the graph gained since (as TensorFlow's Python Session
// does), so building and running can interleave.
//
//   Scope root = Scope::NewRootScope();
//   Output c = ops::Add(root, 1.0f, 2.0f);
//   ASSIGN_OR_RETURN(auto session, ClientSession::Create(root));
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(session->Run({c}, &out));

#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/fetch_structure.h"
#include "client/session/session.h"
#include "core/tensor.h"
#include "proto/config.pb.h"

namespace overseer {

// A feed: the tensor to replace and its value.
using FeedPair = std::pair<Output, Tensor>;

// Thread-safe: Run may be called concurrently (extending is serialised).
class ClientSession {
 public:
  // A session for `scope`'s graph (kept alive by the session) on `options.target`
  // ("" in-process). Errors of NewSession (unknown target scheme) are returned.
  static absl::StatusOr<std::unique_ptr<ClientSession>> Create(const Scope& scope,
                                                               const SessionOptions& options = {});
  // As Create, with an existing session that holds no graph yet; takes ownership.
  static std::unique_ptr<ClientSession> Wrap(const Scope& scope, std::unique_ptr<Session> session);
  ~ClientSession();

  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Computes `fetches`, runs `targets`, with `feeds` replacing the fed tensors;
  // `outputs` receives one tensor per fetch. Before running, the graph's new nodes are
  // sent to the session. Errors: the graph's recorded error (scope status); a null
  // tensor, or a tensor or op of another graph (INVALID_ARGUMENT "tensor 'x:0' belongs
  // to a different graph than this session's"); any error of Session::Run.
  absl::Status Run(const std::vector<FeedPair>& feeds, const std::vector<Output>& fetches,
                   const std::vector<Operation>& targets, std::vector<Tensor>* outputs);
  absl::Status Run(const std::vector<Output>& fetches, std::vector<Tensor>* outputs);
  absl::Status Run(const std::vector<FeedPair>& feeds, const std::vector<Output>& fetches,
                   std::vector<Tensor>* outputs);
  // With RunOptions (timeout, tracing) and optional metadata (may be null).
  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata);

  // Sends the graph's new nodes to the session now (Run does this itself).
  absl::Status ExtendIfNeeded();

  // TensorFlow's nested fetches (client/session/fetch_structure.h): runs the
  // Operations and fetches the Outputs of `fetches`, nested in lists and maps, in one
  // step, and returns the results in the same shape. Errors as Run's.
  absl::StatusOr<Fetched> RunFetches(const Fetches& fetches,
                                     const std::vector<FeedPair>& feeds = {},
                                     const RunOptions& options = RunOptions(),
                                     RunMetadata* metadata = nullptr);

  // Closes the underlying session; later Runs fail FAILED_PRECONDITION.
  absl::Status Close();

  ClientGraph* graph() const { return graph_.get(); }
  // The underlying session (for callers that run by name).
  Session* session() const { return session_.get(); }

 private:
  ClientSession(std::shared_ptr<ClientGraph> graph, std::unique_ptr<Session> session);

  const std::shared_ptr<ClientGraph> graph_;
  const std::unique_ptr<Session> session_;
  absl::Mutex mu_;
  bool created_ ABSL_GUARDED_BY(mu_) = false;
  int nodes_sent_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_CLIENT_SESSION_H_
