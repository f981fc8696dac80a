#ifndef OVERSEER_CLIENT_SESSION_CLIENT_SESSION_DEFAULT_H_
#define OVERSEER_CLIENT_SESSION_CLIENT_SESSION_DEFAULT_H_

// The default session (TensorFlow's `with sess.as_default(): c.eval()`): a per-thread
// stack of ClientSessions. Eval and RunOp use the innermost one.
//
//   {
//     DefaultSessionScope as_default(session.get());
//     ASSIGN_OR_RETURN(Tensor v, Eval(c));
//   }
//
// InteractiveSession owns a ClientSession and is the default for its lifetime.

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "core/tensor.h"

namespace overseer {

// Makes `session` the calling thread's default session until destruction (the
// previous default comes back then). Scopes should nest (destroyed in reverse order)
// and must be destroyed on the thread that created them. `session` must outlive the
// scope.
class DefaultSessionScope {
 public:
  explicit DefaultSessionScope(ClientSession* session);
  ~DefaultSessionScope();
  DefaultSessionScope(const DefaultSessionScope&) = delete;
  DefaultSessionScope& operator=(const DefaultSessionScope&) = delete;

 private:
  ClientSession* session_;
};

// The calling thread's default session, or nullptr.
ClientSession* GetDefaultSession();

// Computes `output` in the default session. FAILED_PRECONDITION if the thread has no
// default session; otherwise ClientSession::Run's errors (a tensor of another graph is
// INVALID_ARGUMENT).
absl::StatusOr<Tensor> Eval(const Output& output, const std::vector<FeedPair>& feeds = {});
// Runs `op` in the default session; errors as Eval.
absl::Status RunOp(const Operation& op, const std::vector<FeedPair>& feeds = {});

// A ClientSession that is the default session of the thread that created it, for its
// whole lifetime (destroy it on that thread).
class InteractiveSession {
 public:
  static absl::StatusOr<std::unique_ptr<InteractiveSession>> Create(
      const Scope& scope, const SessionOptions& options = {});
  ~InteractiveSession();
  InteractiveSession(const InteractiveSession&) = delete;
  InteractiveSession& operator=(const InteractiveSession&) = delete;

  ClientSession* session() const { return session_.get(); }

 private:
  explicit InteractiveSession(std::unique_ptr<ClientSession> session);

  std::unique_ptr<ClientSession> session_;
  std::unique_ptr<DefaultSessionScope> as_default_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_CLIENT_SESSION_DEFAULT_H_
