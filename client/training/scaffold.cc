#include "client/training/scaffold.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/graph/variables.h"
#include "client/summary/summary_ops.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// The graph's Savers (TensorFlow's SAVERS collection), as a graph attachment.
constexpr char kSaversAttachment[] = "savers";
using SaverList = std::vector<std::shared_ptr<Saver>>;

// The caches of the default pieces (TensorFlow's GraphKeys.INIT_OP, ...).
constexpr const char* kInitOpKey = GraphKeys::kInitOp;
constexpr const char* kReadyOpKey = GraphKeys::kReadyOp;
constexpr const char* kReadyForLocalInitOpKey = GraphKeys::kReadyForLocalInitOp;
constexpr const char* kLocalInitOpKey = GraphKeys::kLocalInitOp;
constexpr const char* kSummaryOpKey = GraphKeys::kSummaryOp;

absl::Status MoreThanOne(const std::string& collection, const std::string& arg) {
  return absl::FailedPreconditionError(
      absl::StrCat("More than one item in the collection \"", collection,
                   "\". Please indicate which one to use by passing it to the Scaffold as "
                   "ScaffoldOptions::",
                   arg));
}

// The single entry of collection `key`, nullopt if it is empty.
absl::StatusOr<std::optional<std::string>> CachedName(const ClientGraph& graph,
                                                      const std::string& key) {
  std::vector<std::string> items = graph.GetCollection(key);
  if (items.size() > 1) return MoreThanOne(key, key);
  if (items.empty()) return std::optional<std::string>();
  return std::optional<std::string>(items[0]);
}

// Resolves an Operation piece: given, cached in collection `key`, or made by `make`.
absl::Status ResolveOperation(const Scope& scope, const std::string& key,
                              const std::function<Operation()>& make, Operation* op) {
  if (op->valid()) return absl::OkStatus();
  ClientGraph* graph = scope.graph();
  ASSIGN_OR_RETURN(std::optional<std::string> cached, CachedName(*graph, key));
  if (cached.has_value()) {
    Node* node = graph->FindNode(*cached);
    if (node == nullptr) {
      return absl::NotFoundError(absl::StrCat("the collection \"", key, "\" names node '", *cached,
                                              "', which is not in the graph"));
    }
    *op = Operation(node);
    return absl::OkStatus();
  }
  Operation made = make();
  RETURN_IF_ERROR(scope.status());
  if (made.valid()) graph->AddToCollection(key, made.name());
  *op = made;
  return absl::OkStatus();
}

// The same for an Output piece (the collection holds tensor names).
absl::Status ResolveOutput(const Scope& scope, const std::string& key,
                           const std::function<Output()>& make, Output* out) {
  if (out->valid()) return absl::OkStatus();
  ClientGraph* graph = scope.graph();
  ASSIGN_OR_RETURN(std::optional<std::string> cached, CachedName(*graph, key));
  if (cached.has_value()) {
    absl::StatusOr<Output> found = graph->FindOutput(*cached);
    if (!found.ok()) {
      return absl::NotFoundError(absl::StrCat("the collection \"", key, "\" names tensor '",
                                              *cached, "', which is not in the graph"));
    }
    *out = *found;
    return absl::OkStatus();
  }
  Output made = make();
  RETURN_IF_ERROR(scope.status());
  if (made.valid()) graph->AddToCollection(key, made.name());
  *out = made;
  return absl::OkStatus();
}

// Every variable, and the global ones (those not in kLocalVariables).
struct VariableSplit {
  std::vector<Variable> all, global, local;
};

VariableSplit SplitVariables(const ClientGraph& graph) {
  VariableSplit split;
  std::vector<std::string> local_names = graph.GetCollection(kLocalVariables);
  std::set<std::string> local(local_names.begin(), local_names.end());
  split.all = GlobalVariables(graph);
  for (const Variable& v : split.all) {
    (local.count(v.name()) > 0 ? split.local : split.global).push_back(v);
  }
  // Local variables made outside the "variables" collection.
  for (const std::string& name : local_names) {
    bool known = std::any_of(split.all.begin(), split.all.end(),
                             [&](const Variable& v) { return v.name() == name; });
    if (known) continue;
    absl::StatusOr<Variable> v = LookupVariable(graph, name);
    if (v.ok()) {
      split.all.push_back(*v);
      split.local.push_back(*v);
    }
  }
  return split;
}

// A scope for the default pieces: root name scope, no control dependencies, no device.
Scope Plain(const Scope& scope) {
  return scope.WithNameScope("").WithNoControlDependencies().ClearColocation().WithDevice("");
}

}  // namespace

void AddSaverToGraph(ClientGraph* graph, std::shared_ptr<Saver> saver) {
  auto savers = std::make_shared<SaverList>(GraphSavers(*graph));
  savers->push_back(std::move(saver));
  graph->SetAttachment(kSaversAttachment, std::move(savers));
}

std::vector<std::shared_ptr<Saver>> GraphSavers(const ClientGraph& graph) {
  std::shared_ptr<SaverList> savers = graph.GetAttachment<SaverList>(kSaversAttachment);
  return savers == nullptr ? SaverList() : *savers;
}

Scaffold::Scaffold(const Scope& scope, ScaffoldOptions options) : scope_(scope) {
  if (const Scaffold* from = options.copy_from_scaffold; from != nullptr) {
    if (!options.init_op.valid()) options.init_op = from->init_op_;
    if (options.init_feed_dict.empty()) options.init_feed_dict = from->init_feed_dict_;
    if (!options.init_fn) options.init_fn = from->user_init_fn_;
    if (!options.ready_op.valid()) options.ready_op = from->ready_op_;
    if (!options.ready_for_local_init_op.valid()) {
      options.ready_for_local_init_op = from->ready_for_local_init_op_;
    }
    if (!options.local_init_op.valid()) options.local_init_op = from->local_init_op_;
    if (options.local_init_feed_dict.empty()) {
      options.local_init_feed_dict = from->local_init_feed_dict_;
    }
    if (!options.summary_op.valid()) options.summary_op = from->summary_op_;
    if (options.saver == nullptr) options.saver = from->saver_;
  }
  init_op_ = options.init_op;
  init_feed_dict_ = std::move(options.init_feed_dict);
  user_init_fn_ = std::move(options.init_fn);
  ready_op_ = options.ready_op;
  ready_for_local_init_op_ = options.ready_for_local_init_op;
  local_init_op_ = options.local_init_op;
  local_init_feed_dict_ = std::move(options.local_init_feed_dict);
  summary_op_ = options.summary_op;
  saver_ = options.saver;
}

std::function<absl::Status(ClientSession&)> Scaffold::init_fn() const {
  if (!user_init_fn_) return nullptr;
  return [this](ClientSession& session) { return user_init_fn_(*this, session); };
}

absl::Status Scaffold::CheckGraph() const {
  const ClientGraph* graph = scope_.graph();
  auto check = [graph](const Node* node, const char* what) -> absl::Status {
    if (node == nullptr || node->graph() == graph) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("Scaffold: ", what, " '", node->name(), "' belongs to another graph"));
  };
  RETURN_IF_ERROR(check(init_op_.node(), "init_op"));
  RETURN_IF_ERROR(check(ready_op_.node(), "ready_op"));
  RETURN_IF_ERROR(check(ready_for_local_init_op_.node(), "ready_for_local_init_op"));
  RETURN_IF_ERROR(check(local_init_op_.node(), "local_init_op"));
  RETURN_IF_ERROR(check(summary_op_.node(), "summary_op"));
  for (const auto& [t, v] : init_feed_dict_) RETURN_IF_ERROR(check(t.node(), "init feed"));
  for (const auto& [t, v] : local_init_feed_dict_) {
    RETURN_IF_ERROR(check(t.node(), "local init feed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Saver*> Scaffold::ResolveSaver() {
  if (saver_ != nullptr) return saver_;
  ClientGraph* graph = scope_.graph();
  SaverList savers = GraphSavers(*graph);
  if (savers.size() > 1) return MoreThanOne("savers", "saver");
  if (savers.size() == 1) {
    default_saver_ = savers[0];
    saver_ = default_saver_.get();
    return saver_;
  }
  VariableSplit vars = SplitVariables(*graph);
  SaverOptions options;
  options.var_list = vars.global;
  options.sharded = true;
  options.allow_empty = true;  // As TensorFlow's: no variables, an empty saver.
  ASSIGN_OR_RETURN(std::unique_ptr<Saver> saver, Saver::Create(Plain(scope_), options));
  default_saver_ = std::move(saver);
  AddSaverToGraph(graph, default_saver_);
  saver_ = default_saver_.get();
  return saver_;
}

absl::StatusOr<Output> Scaffold::ResolveSummaryOp() {
  if (!summary_op_resolved_) {
    const Scope plain = Plain(scope_);
    RETURN_IF_ERROR(ResolveOutput(
        scope_, kSummaryOpKey, [&] { return ops::MergeAllSummaries(plain); }, &summary_op_));
    summary_op_resolved_ = true;
  }
  return summary_op_;
}

absl::Status Scaffold::Finalize() {
  ClientGraph* graph = scope_.graph();
  if (finalized_) {
    graph->Finalize();
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckGraph());
  RETURN_IF_ERROR(scope_.status());
  const Scope plain = Plain(scope_);
  const VariableSplit vars = SplitVariables(*graph);
  RETURN_IF_ERROR(ResolveOperation(
      scope_, kInitOpKey,
      [&] { return VariablesInitializer(plain.WithOpName("init"), vars.global); }, &init_op_));
  RETURN_IF_ERROR(ResolveOutput(
      scope_, kReadyOpKey, [&] { return ReportUninitializedVariables(plain, vars.all); },
      &ready_op_));
  RETURN_IF_ERROR(ResolveOutput(
      scope_, kReadyForLocalInitOpKey,
      [&] { return ReportUninitializedVariables(plain, vars.global); }, &ready_for_local_init_op_));
  RETURN_IF_ERROR(ResolveOperation(
      scope_, kLocalInitOpKey,
      [&] { return VariablesInitializer(plain.WithOpName("local_init"), vars.local); },
      &local_init_op_));
  RETURN_IF_ERROR(ResolveSummaryOp().status());
  RETURN_IF_ERROR(ResolveSaver().status());
  RETURN_IF_ERROR(scope_.status());
  graph->Finalize();
  finalized_ = true;
  LOG(INFO) << "Graph was finalized.";
  return absl::OkStatus();
}

}  // namespace overseer
