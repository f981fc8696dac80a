#include "core/executor/executor.h"

#include <atomic>
#include <deque>
#include <functional>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cancellation.h"
#include "core/executor/step_timer.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {
namespace {

// A small number naming the calling thread in step stats, stable for its life.
uint32_t TraceThreadId() {
  static std::atomic<uint32_t> next{1};
  thread_local const uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

}  // namespace

struct Executor::NodeItem {
  OpKernel* kernel = nullptr;  // Null for feed nodes.
  int feed_index = -1;
  // Runs on the thread that made it ready, before that thread takes anything else: a
  // feed, or a kernel that is cheap and never waits.
  bool runs_inline = false;
  bool is_async = false;  // OpKernel::IsAsync.
  // OpKernel::CostFollowsElements: runs inline too when it touches few elements.
  bool cost_follows_elements = false;
  int pending_init = 0;  // Data plus control inputs.
  std::string error_prefix;
  std::vector<bool> value_input;  // Input i is declared a value (not a reference).
  std::vector<DataType> output_types;
  std::vector<OutEdge> out_edges;
  std::vector<std::pair<int, int>> fetch_slots;  // (output, fetch index)
};

// Per-step state, pooled and reused across steps to avoid heap churn.
struct Executor::Step {
  explicit Step(const std::vector<NodeItem>& items, int num_fetches)
      : pending(new std::atomic<int>[items.size()]),
        inputs(items.size()),
        fetched(num_fetches),
        times(items.size()) {
    for (size_t i = 0; i < items.size(); ++i) inputs[i].resize(items[i].value_input.size());
  }

  std::unique_ptr<std::atomic<int>[]> pending;
  std::vector<std::vector<TensorValue>> inputs;
  std::vector<TensorValue> fetched;
  // When tracing, per node: what NodeExecStats records.
  struct NodeTrace {
    int64_t start = 0;  // µs since the epoch; 0: the node did not run.
    int64_t op_start = 0;
    int64_t op_end = 0;
    int64_t end = 0;
    uint32_t thread = 0;
    struct Output {
      int slot;
      DataType dtype;
      TensorShape shape;
      int64_t bytes;
    };
    std::vector<Output> outputs;  // Value outputs, with trace_outputs.
  };
  std::vector<NodeTrace> times;
  std::atomic<bool> failed{false};

  // Set by Run for the current step.
  const ExecutorRunArgs* args = nullptr;
  CancellationManager* cancellation = nullptr;
  Clock* clock = nullptr;
  absl::Time deadline = absl::InfiniteFuture();
  bool trace = false;

  absl::Mutex mu;
  std::deque<int> ready ABSL_GUARDED_BY(mu);
  int outstanding ABSL_GUARDED_BY(mu) = 0;  // Nodes ready or running.
  int tasks ABSL_GUARDED_BY(mu) = 0;        // Pool tasks scheduled, not finished.
  // Run's thread waits for a ready node (or the end): a node queued now needs no pool
  // task, as that thread takes it.
  bool run_waiting ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  // RunAsync's: taken and run by the thread that ends the step (no node outstanding,
  // no pool task holding it). Null for Run, whose thread waits for that instead.
  std::function<void()> on_end ABSL_GUARDED_BY(mu);

  // RunAsync's end, if the step has just ended (else null).
  std::function<void()> TakeEnd() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (on_end == nullptr || outstanding != 0 || tasks != 0) return nullptr;
    std::function<void()> end = std::move(on_end);
    on_end = nullptr;
    return end;
  }
};

// One run of a step: what Run keeps on its stack, and RunAsync on the heap until the
// step ends.
struct Executor::StepRun {
  const ExecutorRunArgs* args = nullptr;
  std::vector<Tensor>* fetches = nullptr;
  std::unique_ptr<Step> step;
  CancellationManager cancellation;  // The step's own.
  StepTimer::Id timer = -1;
  absl::Time timeout_at = absl::InfiniteFuture();
  std::string timeout_message;
  // The caller's cancellation fails the step. The link lets the callback reach the step
  // only until the run ends (the step is then reused), even if it is running when the
  // run deregisters it.
  struct CallerLink {
    absl::Mutex mu;
    Step* step ABSL_GUARDED_BY(mu) = nullptr;
  };
  std::shared_ptr<CallerLink> link;
  CancellationManager::Token caller_token = CancellationManager::kInvalidToken;
  std::function<void(absl::Status)> done;  // RunAsync's.
};

Executor::Executor(PrunedGraph graph, ThreadPool* pool) : graph_(std::move(graph)), pool_(pool) {
  CHECK(pool_ != nullptr) << "an executor needs a thread pool";
}

Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(PrunedGraph graph, KernelCache* kernels,
                                                           ThreadPool* pool) {
  std::unique_ptr<Executor> executor(new Executor(std::move(graph), pool));
  RETURN_IF_ERROR(executor->Init(kernels));
  return executor;
}

absl::Status Executor::Init(KernelCache* kernels) {
  const Graph& g = *graph_.graph;
  items_.resize(g.num_nodes());
  for (int id = 0; id < g.num_nodes(); ++id) {
    const GraphNode& node = g.node(id);
    NodeItem& item = items_[id];
    item.pending_init = static_cast<int>(node.inputs.size() + node.control_inputs.size());
    item.error_prefix = absl::StrCat("node '", node.name(), "' (op '", node.def->op(), "'): ");
    for (DataType t : node.input_types) item.value_input.push_back(!IsRefType(t));
    item.output_types = node.output_types;
    item.out_edges = node.out_edges;
    if (item.pending_init == 0) roots_.push_back(id);
  }
  for (size_t i = 0; i < graph_.feed_nodes.size(); ++i) {
    items_[graph_.feed_nodes[i]].feed_index = static_cast<int>(i);
    items_[graph_.feed_nodes[i]].runs_inline = true;
  }
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (items_[id].feed_index >= 0) continue;
    if (g.node(id).def->op() == kFeedOp) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", g.node(id).name(), "' is a feed node of no feed"));
    }
    ASSIGN_OR_RETURN(std::shared_ptr<OpKernel> kernel, kernels->GetOrCreate(*g.node(id).def));
    items_[id].kernel = kernel.get();
    // An async kernel only starts its wait on the thread: it runs inline too.
    items_[id].is_async = kernel->IsAsync();
    items_[id].runs_inline = (!kernel->IsExpensive() && !kernel->MayWait()) || kernel->IsAsync();
    items_[id].cost_follows_elements = kernel->CostFollowsElements() && !kernel->MayWait();
    may_wait_ = may_wait_ || kernel->MayWait();
    if (kernel->MayWait() && !kernel->IsAsync()) waits_only_async_ = false;
    kernels_.push_back(std::move(kernel));
  }
  for (size_t k = 0; k < graph_.fetches.size(); ++k) {
    const Endpoint& e = graph_.fetches[k];
    items_[e.node].fetch_slots.push_back({e.index, static_cast<int>(k)});
  }
  return absl::OkStatus();
}

std::unique_ptr<Executor::Step> Executor::AcquireStep() {
  {
    absl::MutexLock lock(&free_mu_);
    if (!free_steps_.empty()) {
      std::unique_ptr<Step> step = std::move(free_steps_.back());
      free_steps_.pop_back();
      return step;
    }
  }
  return std::make_unique<Step>(items_, static_cast<int>(graph_.fetches.size()));
}

void Executor::ReleaseStep(std::unique_ptr<Step> step) {
  absl::MutexLock lock(&free_mu_);
  free_steps_.push_back(std::move(step));
}

void Executor::Fail(Step* step, absl::Status status) {
  {
    absl::MutexLock lock(&step->mu);
    if (step->status.ok()) step->status = status;
  }
  step->failed.store(true, std::memory_order_release);
  step->cancellation->StartCancel(std::move(status));
}

absl::Status Executor::CheckArgs(const ExecutorRunArgs& args) const {
  if (args.feeds.size() != graph_.feed_nodes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the step has ", graph_.feed_nodes.size(),
                                                   " feeds but ", args.feeds.size(),
                                                   " values were given"));
  }
  if (args.resource_mgr == nullptr) {
    return absl::InvalidArgumentError("ExecutorRunArgs.resource_mgr is null");
  }
  if (args.clock == nullptr) return absl::InvalidArgumentError("ExecutorRunArgs.clock is null");
  if (args.timeout_ms > 0 && args.timer == nullptr) {
    return absl::InvalidArgumentError(
        "ExecutorRunArgs.timer is null but the step has a timeout (timeout_ms > 0)");
  }
  if (args.cancellation != nullptr && args.cancellation->IsCancelled()) {
    return args.cancellation->status();
  }
  return absl::OkStatus();
}

void Executor::BeginRun(StepRun* run) {
  const ExecutorRunArgs& args = *run->args;
  run->step = AcquireStep();
  Step* s = run->step.get();
  s->args = &args;
  s->cancellation = &run->cancellation;
  s->clock = args.clock;
  s->trace = args.stats != nullptr;
  s->failed.store(false, std::memory_order_relaxed);
  for (size_t i = 0; i < items_.size(); ++i) {
    s->pending[i].store(items_[i].pending_init, std::memory_order_relaxed);
  }
  if (s->trace) std::fill(s->times.begin(), s->times.end(), Step::NodeTrace());

  if (args.timeout_ms > 0) {
    run->timeout_message = absl::StrCat("step exceeded timeout of ", args.timeout_ms, " ms");
    s->deadline = s->clock->Now() + absl::Milliseconds(args.timeout_ms);
    run->timeout_at = s->deadline;
    run->timer = args.timer->Schedule(run->timeout_at, [this, s, run] {
      Fail(s, absl::DeadlineExceededError(run->timeout_message));
    });
  } else {
    s->deadline = absl::InfiniteFuture();
  }

  if (args.cancellation != nullptr) {
    auto link = std::make_shared<StepRun::CallerLink>();
    {
      absl::MutexLock lock(&link->mu);
      link->step = s;
    }
    run->link = link;
    run->caller_token =
        args.cancellation->RegisterCallback([this, link, caller = args.cancellation] {
          absl::MutexLock lock(&link->mu);
          if (link->step != nullptr) Fail(link->step, caller->status());
        });
    if (run->caller_token == CancellationManager::kInvalidToken) {
      Fail(s, args.cancellation->status());  // Cancelled just now: no node runs.
    }
  }
}

absl::Status Executor::Run(const ExecutorRunArgs& args, std::vector<Tensor>* fetches) {
  RETURN_IF_ERROR(CheckArgs(args));
  StepRun run;
  run.args = &args;
  run.fetches = fetches;
  BeginRun(&run);
  Step* s = run.step.get();

  if (!roots_.empty()) {
    ReadyNodes here = StartRoots(s, /*foreign=*/false, nullptr);
    RunNodes(s, &here, /*foreign=*/false);
    // Help with queued nodes until the step is over and no pool task holds it.
    auto can_proceed = [s]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
      return !s->ready.empty() || (s->outstanding == 0 && s->tasks == 0);
    };
    while (true) {
      int node;
      {
        absl::MutexLock lock(&s->mu);
        s->run_waiting = true;
        s->mu.Await(absl::Condition(&can_proceed));
        s->run_waiting = false;
        if (s->ready.empty()) break;
        node = s->ready.front();
        s->ready.pop_front();
      }
      ReadyNodes here = {node};
      RunNodes(s, &here, /*foreign=*/false);
    }
  }
  return EndRun(&run);
}

void Executor::RunAsync(const ExecutorRunArgs& args, std::vector<Tensor>* fetches,
                        std::function<void(absl::Status)> done) {
  if (absl::Status bad = CheckArgs(args); !bad.ok()) {
    done(std::move(bad));
    return;
  }
  auto* run = new StepRun;
  run->args = &args;
  run->fetches = fetches;
  run->done = std::move(done);
  BeginRun(run);
  Step* s = run->step.get();
  auto end = [this, run] {
    absl::Status status = EndRun(run);
    std::function<void(absl::Status)> done = std::move(run->done);
    delete run;
    done(std::move(status));
  };
  if (roots_.empty()) {
    end();
    return;
  }
  // A step that failed ends on a pool thread: the thread that ends it may be running
  // the step's cancellation callbacks (the timeout's, the caller's), which ending it
  // waits for. The step is then no longer used.
  auto on_end = [this, s, end] {
    if (s->failed.load(std::memory_order_acquire)) {
      pool_->Schedule(end, /*may_wait=*/false);
    } else {
      end();
    }
  };
  // This thread is foreign to the step, as an async kernel's reply's is: it runs only the
  // nodes that run inline.
  ReadyNodes here = StartRoots(s, /*foreign=*/true, std::move(on_end));
  // The step may end, and `run` be gone, before RunNodes returns.
  RunNodes(s, &here, /*foreign=*/true);
}

Executor::ReadyNodes Executor::StartRoots(Step* step, bool foreign, std::function<void()> on_end) {
  ReadyNodes here;
  absl::InlinedVector<int, 8> elsewhere;
  Dispatch(step, roots_, &here, &elsewhere, foreign);
  {
    absl::MutexLock lock(&step->mu);
    // step->status is OK here (a reused step was reset as its last run ended), unless the
    // timeout or the caller's cancellation already failed this run.
    step->outstanding = static_cast<int>(roots_.size());
    step->tasks = static_cast<int>(elsewhere.size());
    for (int n : elsewhere) step->ready.push_back(n);
    step->on_end = std::move(on_end);
  }
  for (size_t i = 0; i < elsewhere.size(); ++i) {
    pool_->Schedule([this, step] { RunQueued(step); }, may_wait_);
  }
  return here;
}

absl::Status Executor::EndRun(StepRun* run) {
  const ExecutorRunArgs& args = *run->args;
  Step* s = run->step.get();
  if (run->timer >= 0) args.timer->Cancel(run->timer);
  if (run->link != nullptr) {
    {
      absl::MutexLock lock(&run->link->mu);
      run->link->step = nullptr;
    }
    if (run->caller_token != CancellationManager::kInvalidToken) {
      args.cancellation->DeregisterCallback(run->caller_token);
    }
  }
  absl::Status status;
  {
    absl::MutexLock lock(&s->mu);
    status = s->status;
    s->status = absl::OkStatus();
  }
  if (!status.ok() && args.timeout_ms > 0 && s->clock->Now() >= run->timeout_at) {
    status = absl::DeadlineExceededError(run->timeout_message);
  }
  if (status.ok()) status = CollectFetches(s, run->fetches);
  if (s->failed.load(std::memory_order_relaxed)) {
    for (auto& node_inputs : s->inputs) {
      for (TensorValue& v : node_inputs) v = TensorValue();
    }
  }
  for (TensorValue& v : s->fetched) v = TensorValue();
  if (s->trace) {
    DeviceStepStats* dev = args.stats->add_dev_stats();
    dev->set_device("/job:localhost/replica:0/task:0/device:CPU:0");
    for (size_t id = 0; id < items_.size(); ++id) {
      const Step::NodeTrace& trace = s->times[id];
      if (trace.start == 0) continue;
      NodeExecStats* ns = dev->add_node_stats();
      const GraphNode& node = graph_.graph->node(static_cast<int>(id));
      ns->set_node_name(node.name());
      ns->set_all_start_micros(trace.start);
      if (trace.op_start != 0) {
        ns->set_op_start_rel_micros(trace.op_start - trace.start);
        ns->set_op_end_rel_micros(trace.op_end - trace.start);
      }
      ns->set_all_end_rel_micros(trace.end - trace.start);
      ns->set_thread_id(trace.thread);
      ns->set_timeline_label(absl::StrCat(node.name(), " = ", node.def->op(), "(",
                                          absl::StrJoin(node.def->input(), ", "), ")"));
      for (const Step::NodeTrace::Output& output : trace.outputs) {
        NodeOutput* out = ns->add_output();
        out->set_slot(output.slot);
        TensorDescription* desc = out->mutable_tensor_description();
        desc->set_dtype(output.dtype);
        TensorShapeProto* dims = desc->mutable_shape();
        for (int64_t d : output.shape.dim_sizes()) dims->add_dim()->set_size(d);
        AllocationDescription* allocation = desc->mutable_allocation_description();
        allocation->set_requested_bytes(output.bytes);
        allocation->set_allocated_bytes(output.bytes);
        allocation->set_allocator_name("cpu");
      }
    }
  }
  s->args = nullptr;
  s->cancellation = nullptr;
  ReleaseStep(std::move(run->step));
  return status;
}

void Executor::RunQueued(Step* step) {
  int node = -1;
  {
    absl::MutexLock lock(&step->mu);
    if (!step->ready.empty()) {
      node = step->ready.front();
      step->ready.pop_front();
    }
  }
  if (node >= 0) {
    ReadyNodes here = {node};
    RunNodes(step, &here, /*foreign=*/false);
  }
  std::function<void()> end;
  {
    absl::MutexLock lock(&step->mu);
    --step->tasks;
    end = step->TakeEnd();
  }
  if (end != nullptr) end();
}

bool Executor::RunsInline(const Step* step, int id) const {
  const NodeItem& item = items_[id];
  if (item.runs_inline) return true;
  if (!item.cost_follows_elements) return false;
  // Its inputs are all set: the thread that made it ready set the last.
  const std::vector<TensorValue>& inputs = step->inputs[id];
  for (const TensorValue& v : inputs) {
    if (v.is_ref()) return false;  // Read later, when it runs.
  }
  const int64_t elements = item.kernel->ElementsTouched(inputs);
  return elements >= 0 && elements <= kInlineElements;
}

void Executor::Dispatch(const Step* step, absl::Span<const int> ready, ReadyNodes* here,
                        absl::InlinedVector<int, 8>* elsewhere, bool foreign) const {
  const bool had_work = !here->empty();
  for (int n : ready) {
    if (RunsInline(step, n)) {
      here->push_back(n);
    } else {
      elsewhere->push_back(n);
    }
  }
  // A thread with nothing else to do runs one of the others itself (an expensive kernel,
  // or one that may wait: it then waits with no work of its own held up behind it).
  if (!foreign && !had_work && here->empty() && !elsewhere->empty()) {
    here->push_back(elsewhere->back());
    elsewhere->pop_back();
  }
}

void Executor::RunNodes(Step* step, ReadyNodes* here, bool foreign) {
  // Last in, first out: a node that may wait was pushed only onto an empty list, so it
  // runs after everything pushed since, when this thread has nothing else to run.
  while (!here->empty()) {
    const int node = here->back();
    here->pop_back();
    RunNode(step, node, here, foreign);
  }
}

void Executor::RunNode(Step* step, int id, ReadyNodes* here, bool foreign) {
  NodeItem& item = items_[id];
  std::vector<TensorValue>& inputs = step->inputs[id];
  if (step->failed.load(std::memory_order_acquire)) {
    EndNode(step, id, {}, here, foreign);
    return;
  }
  if (step->trace) {
    step->times[id].start = absl::ToUnixMicros(absl::Now());
    step->times[id].thread = TraceThreadId();
  }
  if (item.feed_index >= 0) {
    TensorValue fed;
    fed.tensor = *step->args->feeds[item.feed_index];
    ReadyNodes ready;
    Propagate(step, item, &fed, &ready);
    EndNode(step, id, ready, here, foreign);
    return;
  }
  // A reference feeding a value input is read now, when the consumer runs.
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorValue& v = inputs[i];
    if (!v.is_ref() || !item.value_input[i]) continue;
    absl::MutexLock lock(v.ref->mu());
    if (!v.ref->is_initialized()) {
      Fail(step, absl::FailedPreconditionError(
                     absl::StrCat(item.error_prefix, "Attempting to use uninitialized value ",
                                  item.kernel->def().input(static_cast<int>(i)))));
      EndNode(step, id, {}, here, foreign);
      return;
    }
    v.tensor = *v.ref->tensor();
    v.ref.reset();
  }
  OpKernelContext::Params params;
  params.kernel = item.kernel;
  params.inputs = &inputs;
  params.step_id = step->args->step_id;
  params.resource_mgr = step->args->resource_mgr;
  params.cancellation = step->cancellation;
  params.clock = step->clock;
  params.deadline = step->deadline;
  params.rendezvous = step->args->rendezvous;
  params.eigen_device = step->args->eigen_device;
  if (step->trace) step->times[id].op_start = absl::ToUnixMicros(absl::Now());
  if (!item.is_async) {
    OpKernelContext ctx(params);
    absl::Status status = item.kernel->Compute(&ctx);
    EndCompute(step, id, std::move(status), ctx.mutable_outputs(), here, foreign);
    return;
  }
  // The node stays outstanding until `done`; whichever of this thread (back from
  // ComputeAsync) and `done`'s comes second ends it. On `done`'s thread (a reply's,
  // foreign to the step) only cheap nodes run; the others go to the pool.
  struct Async {
    explicit Async(const OpKernelContext::Params& params) : ctx(params) {}
    OpKernelContext ctx;
    absl::Status status;
    std::atomic<bool> one_side_done{false};
  };
  auto* async = new Async(params);
  item.kernel->ComputeAsync(&async->ctx, [this, step, id, async](absl::Status status) {
    async->status = std::move(status);
    if (!async->one_side_done.exchange(true, std::memory_order_acq_rel)) return;
    std::vector<TensorValue> outputs = std::move(*async->ctx.mutable_outputs());
    status = std::move(async->status);
    delete async;
    ReadyNodes here;
    EndCompute(step, id, std::move(status), &outputs, &here, /*foreign=*/true);
    if (!here.empty()) RunNodes(step, &here, /*foreign=*/true);
  });
  if (!async->one_side_done.exchange(true, std::memory_order_acq_rel)) return;
  std::vector<TensorValue> outputs = std::move(*async->ctx.mutable_outputs());
  absl::Status status = std::move(async->status);
  delete async;
  EndCompute(step, id, std::move(status), &outputs, here, foreign);
}

void Executor::Propagate(Step* step, const NodeItem& item, TensorValue* outputs,
                         ReadyNodes* ready) {
  for (const OutEdge& e : item.out_edges) {
    if (!e.IsControl()) step->inputs[e.dst][e.dst_input] = outputs[e.src_output];
    if (step->pending[e.dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      ready->push_back(e.dst);
    }
  }
  for (const auto& [output, slot] : item.fetch_slots) step->fetched[slot] = outputs[output];
}

void Executor::EndCompute(Step* step, int id, absl::Status status,
                          std::vector<TensorValue>* outputs, ReadyNodes* here, bool foreign) {
  const NodeItem& item = items_[id];
  status = Annotate(status, item.error_prefix);
  if (step->trace) {
    step->times[id].op_end = absl::ToUnixMicros(absl::Now());
    if (step->args->trace_outputs) {
      for (size_t i = 0; i < outputs->size(); ++i) {
        const TensorValue& v = (*outputs)[i];
        if (v.is_ref() || !v.tensor.IsInitialized()) continue;
        step->times[id].outputs.push_back({static_cast<int>(i), v.tensor.dtype(), v.tensor.shape(),
                                           static_cast<int64_t>(v.tensor.TotalBytes())});
      }
    }
  }
  for (size_t i = 0; i < outputs->size() && status.ok(); ++i) {
    const TensorValue& v = (*outputs)[i];
    if (v.is_ref()) continue;
    if (!v.tensor.IsInitialized()) {
      status =
          absl::InternalError(absl::StrCat(item.error_prefix, "the kernel did not set output ", i));
    } else if (v.tensor.dtype() != RemoveRefType(item.output_types[i])) {
      status = absl::InternalError(absl::StrCat(
          item.error_prefix, "the kernel set output ", i, " to ", DataTypeString(v.tensor.dtype()),
          " but the op declares ", DataTypeString(item.output_types[i])));
    }
  }
  ReadyNodes ready;
  if (status.ok()) {
    Propagate(step, item, outputs->data(), &ready);
  } else {
    Fail(step, std::move(status));
  }
  EndNode(step, id, ready, here, foreign);
}

void Executor::EndNode(Step* step, int id, absl::Span<const int> ready, ReadyNodes* here,
                       bool foreign) {
  if (step->trace && step->times[id].start != 0) {
    step->times[id].end = absl::ToUnixMicros(absl::Now());
  }
  for (TensorValue& v : step->inputs[id]) v = TensorValue();

  absl::InlinedVector<int, 8> elsewhere;
  Dispatch(step, ready, here, &elsewhere, foreign);
  // This node is done; the ready ones are outstanding now. The lock is the last use of
  // the step when the count reaches zero: Run may then return and the step be reused.
  if (ready.size() == 1 && elsewhere.empty()) return;  // Outstanding count unchanged.
  size_t to_pool = elsewhere.size();
  std::function<void()> end;
  {
    absl::MutexLock lock(&step->mu);
    step->outstanding += static_cast<int>(ready.size()) - 1;
    if (to_pool > 0 && step->run_waiting) {
      step->run_waiting = false;  // Run's thread takes the first; no other node claims it.
      --to_pool;
    }
    step->tasks += static_cast<int>(to_pool);
    for (int n : elsewhere) step->ready.push_back(n);
    end = step->TakeEnd();
  }
  for (size_t i = 0; i < to_pool; ++i) {
    pool_->Schedule([this, step] { RunQueued(step); }, may_wait_);
  }
  if (end != nullptr) end();
}

absl::Status Executor::CollectFetches(Step* step, std::vector<Tensor>* fetches) {
  if (fetches == nullptr) {
    if (step->fetched.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(step->fetched.size(), " tensors fetched but no output vector was given"));
  }
  fetches->resize(step->fetched.size());
  for (size_t k = 0; k < step->fetched.size(); ++k) {
    TensorValue& v = step->fetched[k];
    if (!v.is_ref()) {
      (*fetches)[k] = std::move(v.tensor);
      continue;
    }
    absl::MutexLock lock(v.ref->mu());
    if (!v.ref->is_initialized()) {
      const Endpoint& e = graph_.fetches[k];
      return absl::FailedPreconditionError(absl::StrCat("Attempting to use uninitialized value ",
                                                        graph_.graph->node(e.node).name()));
    }
    (*fetches)[k] = *v.ref->tensor();
  }
  return absl::OkStatus();
}

}  // namespace overseer
