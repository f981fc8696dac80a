#include "client/session/session.h"

#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace overseer {
namespace {

struct SessionRegistry {
  absl::Mutex mu;
  std::map<std::string, SessionFactory> factories ABSL_GUARDED_BY(mu);
};

SessionRegistry* Registry() {
  static SessionRegistry* registry = new SessionRegistry();
  return registry;
}

}  // namespace

void RegisterSessionFactory(const std::string& prefix, SessionFactory factory) {
  SessionRegistry* r = Registry();
  absl::MutexLock lock(&r->mu);
  r->factories[prefix] = std::move(factory);
}

absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options) {
  SessionFactory factory;
  std::string known;
  {
    SessionRegistry* r = Registry();
    absl::MutexLock lock(&r->mu);
    size_t best = 0;
    for (const auto& [prefix, f] : r->factories) {
      absl::StrAppend(&known, known.empty() ? "" : ", ",
                      prefix.empty() ? "\"\" (in-process)" : absl::StrCat("\"", prefix, "\""));
      // "" names the in-process session only; other prefixes match the longest.
      const bool matches =
          prefix.empty() ? options.target.empty() : absl::StartsWith(options.target, prefix);
      if (matches && (factory == nullptr || prefix.size() > best)) {
        factory = f;
        best = prefix.size();
      }
    }
  }
  if (factory == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "no session implementation for target '", options.target, "'; known targets: ",
        known.empty() ? "none (link //client/session:direct_session for \"\")" : known));
  }
  return factory(options);
}

absl::Status SessionClosedError() { return absl::FailedPreconditionError("the session is closed"); }

absl::StatusOr<std::string> Session::PartialRunSetup(const std::vector<std::string>&,
                                                     const std::vector<std::string>&,
                                                     const std::vector<std::string>&) {
  return absl::UnimplementedError("this session does not support partial runs");
}

absl::Status Session::PartialRun(const std::string&,
                                 const std::vector<std::pair<std::string, Tensor>>&,
                                 const std::vector<std::string>&, std::vector<Tensor>*) {
  return absl::UnimplementedError("this session does not support partial runs");
}

absl::Status EmptyGraphError() {
  return absl::FailedPreconditionError(
      "The Session graph is empty: add operations to the graph (Create or Extend) before "
      "calling Run");
}

}  // namespace overseer
