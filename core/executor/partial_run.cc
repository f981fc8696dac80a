#include "core/executor/partial_run.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/cluster/rendezvous_key.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {
namespace {

// A node name for the tensor `canonical` ("a:1" gives "<prefix>a/1"): node names have no
// ':', so no two tensors get the same name.
std::string NodeNameFor(absl::string_view prefix, const std::string& canonical) {
  std::string name = absl::StrCat(prefix, canonical);
  std::replace(name.begin(), name.end(), ':', '/');
  return name;
}

absl::Status CheckFree(const Graph& graph, const std::string& name) {
  if (graph.FindNode(name) < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("node '", name, "': the name is reserved for partial runs; rename the node"));
}

void SetSendRecvAttrs(NodeDef* node, DataType dtype, const RendezvousKey& key,
                      absl::string_view device, uint64_t incarnation) {
  SetNodeAttr(node, "T", dtype);
  SetNodeAttr(node, "tensor_name", key.parsed.tensor_name);
  SetNodeAttr(node, "send_device", std::string(device));
  SetNodeAttr(node, "recv_device", std::string(device));
  SetNodeAttr(node, "send_device_incarnation", static_cast<int64_t>(incarnation));
  // Not client-terminated: the value may come after the step starts, so the _Recv
  // may wait (OpKernel::MayWait) and must not hold up its thread.
  SetNodeAttr(node, "client_terminated", false);
}

}  // namespace

std::string CanonicalTensorName(absl::string_view name) {
  return absl::StrContains(name, ':') ? std::string(name) : absl::StrCat(name, ":0");
}

absl::Status CheckPartialRunFetches(const std::vector<std::string>& fetches) {
  absl::flat_hash_set<std::string> seen;
  for (const std::string& fetch : fetches) {
    if (!seen.insert(CanonicalTensorName(fetch)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("fetch '", fetch, "' is named twice in PartialRunSetup"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::vector<int>> FeedsNeededByFetches(const PrunedGraph& step) {
  const Graph& g = *step.graph;
  absl::flat_hash_map<int, int> feed_of_node;  // Node id -> feed index.
  for (size_t i = 0; i < step.feed_nodes.size(); ++i) {
    feed_of_node[step.feed_nodes[i]] = static_cast<int>(i);
  }
  std::vector<std::vector<int>> needs;
  for (const Endpoint& fetch : step.fetches) {
    std::vector<bool> seen(g.num_nodes(), false);
    std::vector<int> stack = {fetch.node};
    std::vector<int> feeds;
    while (!stack.empty()) {
      const int id = stack.back();
      stack.pop_back();
      if (seen[id]) continue;
      seen[id] = true;
      auto it = feed_of_node.find(id);
      if (it != feed_of_node.end()) feeds.push_back(it->second);
      const GraphNode& n = g.node(id);
      for (const Endpoint& in : n.inputs) stack.push_back(in.node);
      for (int c : n.control_inputs) stack.push_back(c);
    }
    std::sort(feeds.begin(), feeds.end());
    needs.push_back(std::move(feeds));
  }
  return needs;
}

PartialRunTracker::PartialRunTracker(const std::vector<std::string>& feeds,
                                     const std::vector<std::string>& fetches,
                                     std::vector<std::vector<int>> needs)
    : needs_(std::move(needs)),
      fed_(feeds.size(), false),
      fetched_(fetches.size(), false),
      remaining_(static_cast<int>(feeds.size() + fetches.size())) {
  for (const std::string& f : feeds) feeds_.push_back(CanonicalTensorName(f));
  for (const std::string& f : fetches) fetches_.push_back(CanonicalTensorName(f));
}

absl::StatusOr<PartialRunTracker::Call> PartialRunTracker::Take(
    const std::vector<std::string>& feeds, const std::vector<std::string>& fetches) {
  auto index_of = [](const std::vector<std::string>& names, const std::string& name) {
    auto it = std::find(names.begin(), names.end(), CanonicalTensorName(name));
    return it == names.end() ? -1 : static_cast<int>(it - names.begin());
  };
  Call call;
  std::vector<bool> fed = fed_, fetched = fetched_;
  for (const std::string& name : feeds) {
    const int i = index_of(feeds_, name);
    if (i < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("feed '", name, "' was not specified in PartialRunSetup"));
    }
    if (fed[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("feed '", name, "' has already been fed in this partial run"));
    }
    fed[i] = true;
    call.feeds.push_back(i);
  }
  for (const std::string& name : fetches) {
    const int i = index_of(fetches_, name);
    if (i < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("fetch '", name, "' was not specified in PartialRunSetup"));
    }
    if (fetched[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("fetch '", name, "' has already been fetched in this partial run"));
    }
    std::string missing;
    for (int need : needs_[i]) {
      if (!fed[need]) absl::StrAppend(&missing, missing.empty() ? "'" : ", '", feeds_[need], "'");
    }
    if (!missing.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fetch '", name, "' cannot be computed from the feeds given so far: it needs ", missing));
    }
    fetched[i] = true;
    call.fetches.push_back(i);
  }
  fed_ = std::move(fed);
  fetched_ = std::move(fetched);
  remaining_ -= static_cast<int>(call.feeds.size() + call.fetches.size());
  call.last = remaining_ == 0;
  return call;
}

absl::StatusOr<PartialRunGraph> MakePartialRunGraph(const PrunedGraph& step,
                                                    const std::vector<std::string>& feeds,
                                                    const std::vector<std::string>& fetches,
                                                    absl::string_view device,
                                                    uint64_t incarnation) {
  RETURN_IF_ERROR(CheckPartialRunFetches(fetches));
  const Graph& graph = *step.graph;
  PartialRunGraph out;
  out.fetch_needs = FeedsNeededByFetches(step);
  GraphDef def = graph.def();

  // Each feed node becomes a _Recv; its consumers are rewired to it.
  absl::flat_hash_map<std::string, std::string> renamed;  // Feed node -> its _Recv.
  for (size_t i = 0; i < feeds.size(); ++i) {
    const GraphNode& feed = graph.node(step.feed_nodes[i]);
    const std::string canonical = CanonicalTensorName(feeds[i]);
    const std::string name = NodeNameFor("_partial_run/recv/", canonical);
    RETURN_IF_ERROR(CheckFree(graph, name));
    ASSIGN_OR_RETURN(RendezvousKey key, RendezvousKey::Parse(MakeRendezvousKey(
                                            device, incarnation, device, "feed/" + canonical)));
    NodeDef* node = def.mutable_node(step.feed_nodes[i]);
    if (node->name() != feed.name()) {
      return absl::InternalError(absl::StrCat("feed node '", feed.name(), "' is not node ",
                                              step.feed_nodes[i], " of its GraphDef"));
    }
    NodeDef recv;
    recv.set_name(name);
    recv.set_op("_Recv");
    SetSendRecvAttrs(&recv, feed.output_types[0], key, device, incarnation);
    *node = std::move(recv);
    renamed[feed.name()] = name;
    out.feed_keys.push_back(std::move(key));
  }
  for (NodeDef& node : *def.mutable_node()) {
    for (std::string& input : *node.mutable_input()) {
      auto it = renamed.find(input);
      if (it == renamed.end() && absl::EndsWith(input, ":0")) {
        it = renamed.find(absl::string_view(input).substr(0, input.size() - 2));
      }
      if (it != renamed.end()) input = it->second;
    }
  }

  // Each fetch is sent by a _Send; the sends are targets of the step.
  std::vector<std::string> targets;
  for (int t : step.targets) targets.push_back(graph.node(t).name());
  for (size_t i = 0; i < fetches.size(); ++i) {
    const std::string canonical = CanonicalTensorName(fetches[i]);
    const std::string name = NodeNameFor("_partial_run/send/", canonical);
    RETURN_IF_ERROR(CheckFree(graph, name));
    ASSIGN_OR_RETURN(RendezvousKey key, RendezvousKey::Parse(MakeRendezvousKey(
                                            device, incarnation, device, "fetch/" + canonical)));
    const Endpoint& e = step.fetches[i];
    const GraphNode& src = graph.node(e.node);
    auto it = renamed.find(src.name());
    NodeDef* send = def.add_node();
    send->set_name(name);
    send->set_op("_Send");
    send->add_input(absl::StrCat(it != renamed.end() ? it->second : src.name(), ":", e.index));
    SetSendRecvAttrs(send, RemoveRefType(src.output_types[e.index]), key, device, incarnation);
    out.fetch_keys.push_back(std::move(key));
    targets.push_back(name);
  }

  ASSIGN_OR_RETURN(std::unique_ptr<Graph> rewritten, Graph::Build(std::move(def)));
  ASSIGN_OR_RETURN(out.graph, PruneGraph(*rewritten, {}, {}, targets));
  return out;
}

BackgroundRun::BackgroundRun(Executor* executor, const ExecutorRunArgs& args,
                             std::function<void(const absl::Status&)> on_error) {
  thread_ = std::thread([this, executor, args, on_error = std::move(on_error)] {
    absl::Status status = executor->Run(args, nullptr);
    if (!status.ok() && on_error) on_error(status);
    absl::MutexLock lock(&mu_);
    finished_ = true;
    status_ = std::move(status);
  });
}

BackgroundRun::~BackgroundRun() { thread_.join(); }

absl::Status BackgroundRun::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&finished_));
  return status_;
}

bool BackgroundRun::finished() const {
  absl::MutexLock lock(&mu_);
  return finished_;
}

absl::Status BackgroundRun::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

namespace {

ExecutorRunArgs WithOwnRendezvous(ExecutorRunArgs args, Rendezvous* rendezvous,
                                  CancellationManager* cancellation) {
  args.feeds = {};
  args.rendezvous = rendezvous;
  args.cancellation = cancellation;
  return args;
}

}  // namespace

PartialRunStep::PartialRunStep(std::unique_ptr<Executor> executor, PartialRunGraph graph,
                               const std::vector<std::string>& feeds,
                               const std::vector<std::string>& fetches,
                               std::vector<FeedCheck> checks, ExecutorRunArgs args)
    : executor_(std::move(executor)),
      graph_(std::move(graph)),
      checks_(std::move(checks)),
      rendezvous_(LocalRendezvous::Create()),
      tracker_(feeds, fetches, graph_.fetch_needs),
      // Calls waiting for a fetch or giving a feed see the step's error.
      run_(executor_.get(), WithOwnRendezvous(args, rendezvous_.get(), &cancellation_),
           [rendezvous = rendezvous_](const absl::Status& s) { rendezvous->StartAbort(s); }) {}

PartialRunStep::~PartialRunStep() {
  if (!run_.finished()) {
    Cancel(absl::CancelledError("the partial run was abandoned before it finished"));
  }
}

bool PartialRunStep::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

void PartialRunStep::Cancel(absl::Status status) {
  cancellation_.StartCancel(status);
  rendezvous_->StartAbort(std::move(status));
}

absl::Status PartialRunStep::End(absl::Status otherwise) {
  absl::Status status = run_.Wait();
  absl::MutexLock lock(&mu_);
  done_ = true;
  return status.ok() ? otherwise : status;
}

absl::Status PartialRunStep::Run(const std::vector<std::pair<std::string, const Tensor*>>& feeds,
                                 const std::vector<std::string>& fetches,
                                 std::vector<Tensor>* outputs) {
  std::vector<std::string> feed_names;
  for (const auto& f : feeds) feed_names.push_back(f.first);
  PartialRunTracker::Call call;
  {
    absl::MutexLock lock(&mu_);
    if (done_) return absl::InvalidArgumentError("the partial run has already ended");
    // The values are checked before anything is recorded, so a bad one loses nothing.
    PartialRunTracker trial = tracker_;
    ASSIGN_OR_RETURN(call, trial.Take(feed_names, fetches));
    for (size_t k = 0; k < feeds.size(); ++k) {
      RETURN_IF_ERROR(CheckFeeds(absl::MakeConstSpan(&checks_[call.feeds[k]], 1),
                                 absl::Span<const Tensor* const>(&feeds[k].second, 1)));
    }
    tracker_ = std::move(trial);
  }
  for (size_t k = 0; k < feeds.size(); ++k) {
    absl::Status sent = rendezvous_->Send(graph_.feed_keys[call.feeds[k]], *feeds[k].second);
    // Aborted: the step failed or was cancelled, and ends now.
    if (!sent.ok()) return End(sent);
  }
  if (outputs != nullptr) outputs->clear();
  for (int i : call.fetches) {
    absl::StatusOr<Tensor> value = rendezvous_->Recv(graph_.fetch_keys[i], RendezvousWait());
    if (!value.ok()) return End(value.status());
    if (outputs != nullptr) outputs->push_back(*std::move(value));
  }
  if (call.last) return End(absl::OkStatus());
  return absl::OkStatus();
}

}  // namespace overseer
