#include "core/rpc/completion_queue_loop.h"

#include <utility>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace overseer {
namespace {

// Under ThreadSanitizer: what a thread did before it made a tag happens before the tag
// runs on the loop's thread. A tag reaches the loop through libgrpc, which is not
// instrumented. third_party/grpc_tsan_annotations.cc orders the operations that gRPC's
// C API starts with the tag itself (a call's batch). An alarm's completion reaches the
// queue under an object of libgrpc++'s own, and nothing ordered it: TSan reported the
// tag's std::function as a race when a thread other than the loop's set an alarm.
#if defined(__SANITIZE_THREAD__)
void MadeTag(void* tag) { __tsan_release(tag); }
void RunningTag(void* tag) { __tsan_acquire(tag); }
#else
void MadeTag(void*) {}
void RunningTag(void*) {}
#endif

class FunctionTag {
 public:
  explicit FunctionTag(std::function<void(bool)> done) : done_(std::move(done)) {}
  void Run(bool ok) { done_(ok); }

 private:
  std::function<void(bool)> done_;
};

}  // namespace

void* CompletionQueueLoop::NewTag(std::function<void(bool ok)> done) {
  auto* tag = new FunctionTag(std::move(done));
  MadeTag(tag);
  return tag;
}

void CompletionQueueLoop::FreeTag(void* tag) { delete static_cast<FunctionTag*>(tag); }

CompletionQueueLoop::~CompletionQueueLoop() { Shutdown(); }

void CompletionQueueLoop::Attach(grpc::ServerBuilder* builder) {
  cq_ = builder->AddCompletionQueue();
}

void CompletionQueueLoop::OnStart(std::function<void()> callback) {
  on_start_.push_back(std::move(callback));
}

void CompletionQueueLoop::Start() {
  {
    absl::MutexLock lock(&mu_);
    running_ = true;
  }
  for (const auto& callback : on_start_) callback();
  thread_ = std::thread([this] { Loop(); });
}

bool CompletionQueueLoop::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

void CompletionQueueLoop::Hold() {
  absl::MutexLock lock(&mu_);
  ++held_;
}

bool CompletionQueueLoop::HoldIfRunning() {
  absl::MutexLock lock(&mu_);
  if (!running_ || shut_down_) return false;
  ++held_;
  return true;
}

void CompletionQueueLoop::Release() {
  absl::MutexLock lock(&mu_);
  --held_;
}

void CompletionQueueLoop::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || cq_ == nullptr) return;
    shut_down_ = true;
    // Held work finishes through operations that the loop's thread completes, so the
    // thread keeps polling meanwhile.
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_ == 0; };
    mu_.Await(absl::Condition(&idle));
    running_ = false;
  }
  cq_->Shutdown();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    Loop();  // Never started: drain what was queued (nothing but requests).
  }
}

void CompletionQueueLoop::Loop() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) {
    RunningTag(tag);
    auto* t = static_cast<FunctionTag*>(tag);
    t->Run(ok);
    delete t;
  }
}

}  // namespace overseer
