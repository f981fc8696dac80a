#include "client/session/direct_session.h"

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "client/session/signature_key.h"
#include "core/graph/feed_check.h"
#include "core/graph/prune.h"
#include "core/graph/update_gate.h"
#include "core/logging.h"
#include "core/op_kernel.h"
#include "core/resource_mgr.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "core/types.h"

namespace overseer {
namespace {

std::atomic<int64_t> g_next_step_id{1};

const bool kRegistered = [] {
  RegisterSessionFactory(
      "", [](const SessionOptions& options) -> absl::StatusOr<std::unique_ptr<Session>> {
        return std::unique_ptr<Session>(std::make_unique<DirectSession>(options));
      });
  return true;
}();

// The one device of an in-process session, named as TensorFlow names it.
constexpr char kLocalCpuDevice[] = "/job:localhost/replica:0/task:0/device:CPU:0";

// Random and non-zero, chosen once per process (as a task's incarnation).
uint64_t ProcessIncarnation() {
  static const uint64_t incarnation = [] {
    absl::BitGen gen;
    uint64_t value = 0;
    while (value == 0) value = absl::Uniform<uint64_t>(gen);
    return value;
  }();
  return incarnation;
}

// The inter-op pool that in-process sessions share (ConfigProto.use_per_session_threads
// false). Never destroyed: steps of sessions anywhere in the process may use it until exit.
ThreadPool* SharedInterOpPool() {
  static ThreadPool* pool = new ThreadPool(DefaultMinThreads());
  return pool;
}

std::unique_ptr<ThreadPool> OwnInterOpPool(const ConfigProto& config) {
  if (config.inter_op_parallelism_threads() > 0) {
    // A cap for steps that only compute; steps that may wait still get threads, so
    // that a blocked dequeue cannot hold back the enqueue it waits for.
    const int n = config.inter_op_parallelism_threads();
    return std::make_unique<ThreadPool>(n, 4096, n);
  }
  if (config.use_per_session_threads()) return std::make_unique<ThreadPool>(DefaultMinThreads());
  return nullptr;
}

}  // namespace

struct DirectSession::IntraOpPool {
  explicit IntraOpPool(int threads) : pool(threads), device(&pool, threads) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

DirectSession::DirectSession(const SessionOptions& options)
    : options_(options),
      clock_(options.clock != nullptr ? options.clock : Clock::Real()),
      step_timer_(clock_),
      own_resources_(options.resource_mgr == nullptr && options.config.isolate_session_state()
                         ? std::make_unique<ResourceMgr>()
                         : nullptr),
      resource_mgr_(options.resource_mgr != nullptr ? options.resource_mgr
                    : own_resources_ != nullptr     ? own_resources_.get()
                                                    : ResourceMgr::Default()),
      own_pool_(OwnInterOpPool(options.config)),
      pool_(own_pool_ != nullptr ? own_pool_.get() : SharedInterOpPool()),
      intra_op_(options.config.intra_op_parallelism_threads() > 0
                    ? std::make_unique<IntraOpPool>(options.config.intra_op_parallelism_threads())
                    : nullptr) {}

int DirectSession::intra_op_threads() const {
  return intra_op_ != nullptr ? intra_op_->device.numThreads() : DefaultEigenDevice().numThreads();
}

DirectSession::~DirectSession() { Close().IgnoreError(); }

absl::Status DirectSession::SetGraph(GraphDef graph) {
  ASSIGN_OR_RETURN(ValidatedGraph validated, ValidateAndIndexGraph(std::move(graph)));
  graph_def_ = validated.graph->def();
  graph_ = std::make_shared<const ValidatedGraph>(std::move(validated));
  return absl::OkStatus();
}

absl::Status DirectSession::Create(const GraphDef& graph) {
  absl::MutexLock lock(&mu_);
  if (closed_) return SessionClosedError();
  if (graph_ != nullptr) {
    return absl::FailedPreconditionError(
        "the session already has a graph; use Extend to add nodes");
  }
  return SetGraph(graph);
}

absl::Status DirectSession::Extend(const GraphDef& graph) {
  absl::MutexLock lock(&mu_);
  if (closed_) return SessionClosedError();
  if (graph_ == nullptr) return SetGraph(graph);
  for (const NodeDef& node : graph.node()) {
    if (graph_->graph->FindNode(node.name()) >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name(), "': Extend adds a node whose name is already in the graph"));
    }
  }
  GraphDef merged = graph_def_;
  for (const NodeDef& node : graph.node()) *merged.add_node() = node;
  // Signatures already cached stay valid: new nodes cannot feed old ones.
  return SetGraph(std::move(merged));
}

absl::StatusOr<std::shared_ptr<const DirectSession::Signature>> DirectSession::BuildSignature(
    const ValidatedGraph& graph, const std::vector<std::string>& feed_names,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  ASSIGN_OR_RETURN(PrunedGraph pruned, PruneGraph(*graph.graph, feed_names, fetches, targets));
  auto sig = std::make_shared<Signature>();
  ASSIGN_OR_RETURN(sig->feeds, MakeFeedChecks(*graph.graph, feed_names, *pruned.graph));
  if (options_.config.log_device_placement()) {
    for (int id = 0; id < pruned.graph->num_nodes(); ++id) {
      const GraphNode& node = pruned.graph->node(id);
      LOG(INFO) << node.name() << ": (" << node.def->op() << "): " << kLocalCpuDevice;
    }
  }
  sig->gate = StepGatePass(*pruned.graph,
                           std::vector<std::string>(pruned.graph->num_nodes(), kLocalCpuDevice));
  ASSIGN_OR_RETURN(sig->executor, Executor::Create(std::move(pruned), &kernels_, pool_));
  return std::shared_ptr<const Signature>(std::move(sig));
}

absl::Status DirectSession::Runnable() const {
  if (closed_) return SessionClosedError();
  if (graph_ == nullptr) {
    return absl::FailedPreconditionError("the session has no graph; call Create first");
  }
  if (graph_def_.node_size() == 0) return EmptyGraphError();
  return absl::OkStatus();
}

ExecutorRunArgs DirectSession::NewRunArgs(int64_t timeout_ms) {
  ExecutorRunArgs args;
  args.step_id = g_next_step_id.fetch_add(1, std::memory_order_relaxed);
  args.resource_mgr = resource_mgr_;
  args.clock = clock_;
  args.timer = &step_timer_;
  if (intra_op_ != nullptr) args.eigen_device = &intra_op_->device;
  args.timeout_ms = timeout_ms > 0 ? timeout_ms : options_.config.operation_timeout_in_ms();
  return args;
}

absl::StatusOr<std::shared_ptr<const DirectSession::Signature>> DirectSession::GetSignature(
    const std::string& key, const std::function<std::vector<std::string>()>& feeds,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  std::shared_ptr<const ValidatedGraph> graph;
  {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(Runnable());
    auto it = signatures_.find(key);
    if (it != signatures_.end()) return it->second;
    graph = graph_;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const Signature> sig,
                   BuildSignature(*graph, feeds(), fetches, targets));
  absl::MutexLock lock(&mu_);
  if (closed_) return SessionClosedError();
  // Another thread may have built it meanwhile; keep one so kernels see one executor.
  return signatures_.emplace(key, std::move(sig)).first->second;
}

absl::Status DirectSession::RunSignature(const Signature& sig,
                                         absl::Span<const Tensor* const> feeds,
                                         const RunOptions& options, std::vector<Tensor>* outputs,
                                         RunMetadata* metadata) {
  RETURN_IF_ERROR(CheckFeeds(sig.feeds, feeds));
  ExecutorRunArgs args = NewRunArgs(options.timeout_in_ms());
  args.feeds = feeds;
  if (metadata != nullptr && options.trace_level() != RunOptions::NO_TRACE) {
    args.stats = metadata->mutable_step_stats();
    args.trace_outputs = options.trace_level() == RunOptions::FULL_TRACE;
  }
  if (metadata != nullptr && options.output_partition_graphs()) {
    GraphDef* graph = metadata->add_partition_graphs();
    *graph = sig.executor->graph().def();
    for (NodeDef& node : *graph->mutable_node()) node.set_device(kLocalCpuDevice);
  }
  // The process's variables are every DirectSession's: one gate for all of them.
  static UpdateGate* const gate = new UpdateGate();
  if (sig.gate.snapshot) {
    RETURN_IF_ERROR(gate->EnterSnapshot(sig.gate.keys));
    absl::Status s = sig.executor->Run(args, outputs);
    gate->ExitSnapshot();
    return s;
  }
  if (sig.gate.free()) return sig.executor->Run(args, outputs);
  gate->EnterWriterBlocking(sig.gate.keys);
  absl::Status s = sig.executor->Run(args, outputs);
  gate->ExitWriter(sig.gate.keys);
  return s;
}

absl::Status DirectSession::Run(const RunOptions& options,
                                const std::vector<std::pair<std::string, Tensor>>& feeds,
                                const std::vector<std::string>& fetches,
                                const std::vector<std::string>& targets,
                                std::vector<Tensor>* outputs, RunMetadata* metadata) {
  thread_local std::string key;
  SignatureKey(
      feeds, [](const auto& f) -> const std::string& { return f.first; }, fetches, targets, &key);
  auto feed_names = [&feeds] {
    std::vector<std::string> names;
    names.reserve(feeds.size());
    for (const auto& f : feeds) names.push_back(f.first);
    return names;
  };
  ASSIGN_OR_RETURN(std::shared_ptr<const Signature> sig,
                   GetSignature(key, feed_names, fetches, targets));
  absl::InlinedVector<const Tensor*, 8> feed_values;
  for (const auto& f : feeds) feed_values.push_back(&f.second);
  return RunSignature(*sig, feed_values, options, outputs, metadata);
}

absl::StatusOr<CallableHandle> DirectSession::MakeCallable(const CallableOptions& options) {
  const std::vector<std::string> feeds(options.feed().begin(), options.feed().end());
  const std::vector<std::string> fetches(options.fetch().begin(), options.fetch().end());
  const std::vector<std::string> targets(options.target().begin(), options.target().end());
  std::string key;
  SignatureKey(
      feeds, [](const std::string& f) -> const std::string& { return f; }, fetches, targets, &key);
  ASSIGN_OR_RETURN(std::shared_ptr<const Signature> sig,
                   GetSignature(
                       key, [&feeds] { return feeds; }, fetches, targets));
  absl::MutexLock lock(&mu_);
  if (closed_) return SessionClosedError();
  const CallableHandle handle = next_callable_++;
  callables_[handle] = Callable{std::move(sig), options.run_options(), options.fetch_size()};
  return handle;
}

absl::Status DirectSession::RunCallable(CallableHandle handle, const std::vector<Tensor>& feeds,
                                        std::vector<Tensor>* fetches, RunMetadata* metadata) {
  Callable callable;
  {
    absl::ReaderMutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
    auto it = callables_.find(handle);
    if (it == callables_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("no callable with handle ", handle,
                                                     " in this session (released or never made)"));
    }
    callable = it->second;
  }
  if (feeds.size() != callable.signature->feeds.size()) {
    return absl::InvalidArgumentError(absl::StrCat("callable ", handle, " takes ",
                                                   callable.signature->feeds.size(), " feeds, got ",
                                                   feeds.size()));
  }
  if (fetches == nullptr && callable.num_fetches > 0) {
    return absl::InvalidArgumentError(absl::StrCat("callable ", handle, " has ",
                                                   callable.num_fetches,
                                                   " fetches but no output vector was given"));
  }
  absl::InlinedVector<const Tensor*, 8> feed_values;
  for (const Tensor& f : feeds) feed_values.push_back(&f);
  return RunSignature(*callable.signature, feed_values, callable.run_options, fetches, metadata);
}

absl::Status DirectSession::ReleaseCallable(CallableHandle handle) {
  absl::MutexLock lock(&mu_);
  if (closed_) return SessionClosedError();
  if (handle <= 0 || handle >= next_callable_) {
    return absl::InvalidArgumentError(
        absl::StrCat("no callable with handle ", handle, " was made in this session"));
  }
  callables_.erase(handle);
  return absl::OkStatus();
}

absl::StatusOr<std::string> DirectSession::PartialRunSetup(
    const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  std::shared_ptr<const ValidatedGraph> graph;
  {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(Runnable());
    graph = graph_;
  }
  ASSIGN_OR_RETURN(PrunedGraph pruned, PruneGraph(*graph->graph, feeds, fetches, targets));
  ASSIGN_OR_RETURN(std::vector<FeedCheck> checks,
                   MakeFeedChecks(*graph->graph, feeds, *pruned.graph));
  ASSIGN_OR_RETURN(
      PartialRunGraph partial,
      MakePartialRunGraph(pruned, feeds, fetches, kLocalCpuDevice, ProcessIncarnation()));
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                   Executor::Create(std::move(partial.graph), &kernels_, pool_));
  const ExecutorRunArgs args = NewRunArgs(/*timeout_ms=*/0);
  auto step = std::make_shared<PartialRunStep>(std::move(executor), std::move(partial), feeds,
                                               fetches, std::move(checks), args);
  absl::MutexLock lock(&mu_);
  if (closed_) return SessionClosedError();  // The step is cancelled as it goes.
  std::string handle = absl::StrCat(next_partial_run_++);
  partial_runs_.emplace(handle, std::move(step));
  return handle;
}

absl::Status DirectSession::PartialRun(const std::string& handle,
                                       const std::vector<std::pair<std::string, Tensor>>& feeds,
                                       const std::vector<std::string>& fetches,
                                       std::vector<Tensor>* outputs) {
  std::shared_ptr<PartialRunStep> step;
  {
    absl::ReaderMutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
    auto it = partial_runs_.find(handle);
    if (it == partial_runs_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("no partial run with handle '", handle,
                       "' in this session: call PartialRunSetup first (a partial run ends with "
                       "its last feed and fetch, or its first error)"));
    }
    step = it->second;
  }
  if (outputs == nullptr && !fetches.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("partial run '", handle, "' has ",
                                                   fetches.size(),
                                                   " fetches but no output vector was given"));
  }
  std::vector<std::pair<std::string, const Tensor*>> values;
  values.reserve(feeds.size());
  for (const auto& [name, value] : feeds) values.emplace_back(name, &value);
  absl::Status status = step->Run(values, fetches, outputs);
  if (step->done()) {
    absl::MutexLock lock(&mu_);
    auto it = partial_runs_.find(handle);
    if (it != partial_runs_.end() && it->second == step) partial_runs_.erase(it);
  }
  return status;
}

absl::Status DirectSession::Close() {
  absl::flat_hash_map<std::string, std::shared_ptr<const Signature>> signatures;
  absl::flat_hash_map<std::string, std::shared_ptr<PartialRunStep>> partial_runs;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    signatures.swap(signatures_);
    partial_runs.swap(partial_runs_);
    callables_.clear();
    graph_.reset();
  }
  for (auto& [handle, step] : partial_runs) {
    step->Cancel(absl::CancelledError(
        absl::StrCat("partial run '", handle, "' was cancelled: the session was closed")));
  }
  partial_runs.clear();  // Waits for their executors (unless a PartialRun call holds one).
  // Steps still running keep their executor (and its kernels) alive.
  signatures.clear();
  kernels_.Clear();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DeviceAttributes>> DirectSession::ListDevices() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
  }
  DeviceAttributes cpu;
  cpu.set_name(kLocalCpuDevice);
  cpu.set_device_type("CPU");
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) cpu.set_memory_limit(int64_t{pages} * page_size);
  cpu.set_incarnation(ProcessIncarnation());
  return std::vector<DeviceAttributes>{cpu};
}

absl::Status DirectSession::Reset(const std::vector<std::string>& containers) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
  }
  if (containers.empty()) {
    resource_mgr_->Clear();
  } else {
    for (const std::string& container : containers) resource_mgr_->Cleanup(container);
  }
  return Close();
}

int DirectSession::NumCachedExecutors() const {
  absl::ReaderMutexLock lock(&mu_);
  return static_cast<int>(signatures_.size());
}

}  // namespace overseer
