#include "client/session/client_session_default.h"

#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

namespace {
std::vector<ClientSession*>& DefaultStack() {
  thread_local std::vector<ClientSession*> stack;
  return stack;
}
}  // namespace

DefaultSessionScope::DefaultSessionScope(ClientSession* session) : session_(session) {
  DefaultStack().push_back(session);
}

DefaultSessionScope::~DefaultSessionScope() {
  // Out-of-order destruction (an InteractiveSession outliving a nested scope) removes
  // this scope's entry and leaves the others.
  auto& stack = DefaultStack();
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
    if (*it == session_) {
      stack.erase(std::next(it).base());
      return;
    }
  }
  LOG(WARNING) << "DefaultSessionScope destroyed on a thread that did not create it";
}

ClientSession* GetDefaultSession() {
  auto& stack = DefaultStack();
  return stack.empty() ? nullptr : stack.back();
}

absl::StatusOr<Tensor> Eval(const Output& output, const std::vector<FeedPair>& feeds) {
  ClientSession* session = GetDefaultSession();
  if (session == nullptr) {
    return absl::FailedPreconditionError(
        "Eval: no default session is registered; use DefaultSessionScope or an "
        "InteractiveSession");
  }
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(session->Run(feeds, {output}, {}, &outputs));
  return outputs[0];
}

absl::Status RunOp(const Operation& op, const std::vector<FeedPair>& feeds) {
  ClientSession* session = GetDefaultSession();
  if (session == nullptr) {
    return absl::FailedPreconditionError(
        "RunOp: no default session is registered; use DefaultSessionScope or an "
        "InteractiveSession");
  }
  std::vector<Tensor> outputs;
  return session->Run(feeds, {}, {op}, &outputs);
}

absl::StatusOr<std::unique_ptr<InteractiveSession>> InteractiveSession::Create(
    const Scope& scope, const SessionOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session, ClientSession::Create(scope, options));
  return std::unique_ptr<InteractiveSession>(new InteractiveSession(std::move(session)));
}

InteractiveSession::InteractiveSession(std::unique_ptr<ClientSession> session)
    : session_(std::move(session)),
      as_default_(std::make_unique<DefaultSessionScope>(session_.get())) {}

InteractiveSession::~InteractiveSession() { as_default_.reset(); }

}  // namespace overseer
