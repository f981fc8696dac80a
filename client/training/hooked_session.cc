#include "client/training/hooked_session.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// The fetches of one run without duplicates, and where each party's results are.
class FetchList {
 public:
  // The index in the run's fetches of `t`, adding it if new.
  int Add(const Output& t) {
    auto [it, added] = index_.emplace(t, static_cast<int>(fetches_.size()));
    if (added) fetches_.push_back(t);
    return it->second;
  }
  const std::vector<Output>& fetches() const { return fetches_; }

 private:
  std::vector<Output> fetches_;
  std::map<Output, int> index_;
};

}  // namespace

void MergeRunOptions(const RunOptions& incoming, RunOptions* options) {
  options->set_trace_level(std::max(options->trace_level(), incoming.trace_level()));
  options->set_timeout_in_ms(std::max(options->timeout_in_ms(), incoming.timeout_in_ms()));
  options->set_inter_op_thread_pool(
      std::max(options->inter_op_thread_pool(), incoming.inter_op_thread_pool()));
}

HookedSession::HookedSession(ClientSession* session, std::vector<SessionRunHook*> hooks)
    : session_(session), hooks_(std::move(hooks)) {}

absl::Status HookedSession::Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                                const std::vector<Output>& fetches,
                                const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
                                RunMetadata* metadata) {
  SessionRunArgs original;
  original.fetches.assign(fetches.begin(), fetches.end());
  original.targets = targets;
  original.feeds = feeds;
  original.options = options;
  SessionRunContext context(std::move(original), session_);

  const ClientGraph& graph = *session_->graph();
  FetchList run_fetches;
  std::vector<int> caller_indices;
  for (const Output& t : fetches) caller_indices.push_back(run_fetches.Add(t));
  std::vector<Operation> run_targets = targets;
  RunOptions run_options = options;

  // Every hook's requests; feeds are checked for conflicts by tensor name.
  std::vector<std::vector<int>> hook_indices(hooks_.size());
  std::vector<FeedPair> hook_feeds;
  std::set<std::string> fed_by_hook;
  for (size_t h = 0; h < hooks_.size(); ++h) {
    ASSIGN_OR_RETURN(SessionRunArgs request, hooks_[h]->BeforeRun(&context));
    for (const Fetch& f : request.fetches) {
      ASSIGN_OR_RETURN(Output t, f.Resolve(graph));
      hook_indices[h].push_back(run_fetches.Add(t));
    }
    for (const Operation& op : request.targets) {
      if (std::find(run_targets.begin(), run_targets.end(), op) == run_targets.end()) {
        run_targets.push_back(op);
      }
    }
    for (FeedPair& feed : request.feeds) {
      if (!feed.first.valid()) {
        return absl::InvalidArgumentError("a hook feeds a null tensor");
      }
      const std::string name = feed.first.name();
      if (!fed_by_hook.insert(name).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", name, "' is fed by two hooks; a tensor may be fed by one hook only"));
      }
      hook_feeds.push_back(std::move(feed));
    }
    MergeRunOptions(request.options, &run_options);
  }

  std::vector<FeedPair> run_feeds = feeds;
  if (!hook_feeds.empty()) {
    for (const FeedPair& feed : feeds) {
      if (feed.first.valid() && fed_by_hook.count(feed.first.name()) > 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", feed.first.name(),
                         "' is fed by a hook and by the caller; feed it in one place only"));
      }
    }
    run_feeds.insert(run_feeds.end(), hook_feeds.begin(), hook_feeds.end());
  }

  std::vector<Tensor> results;
  RunMetadata run_metadata;
  RETURN_IF_ERROR(session_->Run(run_options, run_feeds, run_fetches.fetches(), run_targets,
                                &results, &run_metadata));

  if (outputs != nullptr) {
    outputs->clear();
    for (int i : caller_indices) outputs->push_back(results[i]);
  }
  SessionRunValues values;
  values.options = run_options;
  values.run_metadata = run_metadata;
  for (size_t h = 0; h < hooks_.size(); ++h) {
    values.results.clear();
    for (int i : hook_indices[h]) values.results.push_back(results[i]);
    absl::Status status = hooks_[h]->AfterRun(&context, values);
    if (!status.ok()) {
      should_stop_ = should_stop_ || context.stop_requested();
      return status;
    }
  }
  should_stop_ = should_stop_ || context.stop_requested();
  if (metadata != nullptr) *metadata = std::move(run_metadata);
  return absl::OkStatus();
}

}  // namespace overseer
