#include "client/session/client_session.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace overseer {

ClientSession::ClientSession(std::shared_ptr<ClientGraph> graph, std::unique_ptr<Session> session)
    : graph_(std::move(graph)), session_(std::move(session)) {}

ClientSession::~ClientSession() { session_->Close().IgnoreError(); }

absl::StatusOr<std::unique_ptr<ClientSession>> ClientSession::Create(
    const Scope& scope, const SessionOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options));
  return Wrap(scope, std::move(session));
}

std::unique_ptr<ClientSession> ClientSession::Wrap(const Scope& scope,
                                                   std::unique_ptr<Session> session) {
  return std::unique_ptr<ClientSession>(
      new ClientSession(scope.graph_as_shared_ptr(), std::move(session)));
}

absl::Status ClientSession::ExtendIfNeeded() {
  RETURN_IF_ERROR(graph_->status());
  absl::MutexLock lock(&mu_);
  const int total = graph_->num_nodes();
  if (created_ && total == nodes_sent_) return absl::OkStatus();
  GraphDef def;
  RETURN_IF_ERROR(graph_->ToGraphDefFrom(nodes_sent_, &def));
  const int sent = nodes_sent_ + def.node_size();
  if (!created_) {
    RETURN_IF_ERROR(session_->Create(def));
    created_ = true;
  } else {
    RETURN_IF_ERROR(session_->Extend(def));
  }
  nodes_sent_ = sent;
  return absl::OkStatus();
}

namespace {

absl::Status CheckGraph(const ClientGraph* graph, Node* node, const std::string& what,
                        const std::string& name) {
  if (node == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", what, " is null (a failed builder or no gradient)"));
  }
  if (node->graph() != graph) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "' belongs to a different graph than this session's"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ClientSession::Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                                const std::vector<Output>& fetches,
                                const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
                                RunMetadata* metadata) {
  std::vector<std::pair<std::string, Tensor>> feed_names;
  for (const auto& [t, value] : feeds) {
    RETURN_IF_ERROR(CheckGraph(graph_.get(), t.node(), "tensor", t.valid() ? t.name() : ""));
    feed_names.emplace_back(t.name(), value);
  }
  std::vector<std::string> fetch_names;
  for (const Output& t : fetches) {
    RETURN_IF_ERROR(CheckGraph(graph_.get(), t.node(), "tensor", t.valid() ? t.name() : ""));
    fetch_names.push_back(t.name());
  }
  std::vector<std::string> target_names;
  for (const Operation& op : targets) {
    RETURN_IF_ERROR(CheckGraph(graph_.get(), op.node(), "operation", op.valid() ? op.name() : ""));
    target_names.push_back(op.name());
  }
  RETURN_IF_ERROR(ExtendIfNeeded());
  return session_->Run(options, feed_names, fetch_names, target_names, outputs, metadata);
}

absl::Status ClientSession::Run(const std::vector<FeedPair>& feeds,
                                const std::vector<Output>& fetches,
                                const std::vector<Operation>& targets,
                                std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
}

absl::Status ClientSession::Run(const std::vector<Output>& fetches, std::vector<Tensor>* outputs) {
  return Run(RunOptions(), {}, fetches, {}, outputs, nullptr);
}

absl::Status ClientSession::Run(const std::vector<FeedPair>& feeds,
                                const std::vector<Output>& fetches, std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, {}, outputs, nullptr);
}

absl::StatusOr<Fetched> ClientSession::RunFetches(const Fetches& fetches,
                                                  const std::vector<FeedPair>& feeds,
                                                  const RunOptions& options,
                                                  RunMetadata* metadata) {
  const FetchPlan plan(fetches);
  std::vector<Tensor> values;
  RETURN_IF_ERROR(Run(options, feeds, plan.outputs(), plan.targets(), &values, metadata));
  return plan.Build(std::move(values));
}

absl::Status ClientSession::Close() { return session_->Close(); }

}  // namespace overseer
