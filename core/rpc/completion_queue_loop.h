#ifndef OVERSEER_CORE_RPC_COMPLETION_QUEUE_LOOP_H_
#define OVERSEER_CORE_RPC_COMPLETION_QUEUE_LOOP_H_

// One server completion queue polled by one thread of its own, for a service's
// asynchronous methods and the client calls they make. A call that arrives on the
// queue and the nested client calls its handler issues on the same queue are all
// read and continued by that one thread: no other thread is woken on the way
// (gRPC 1.51's synchronous server, and its callback API, hand each event that a
// poller reads to another thread; docs/performance.md section 2).
//
// Whatever runs on the loop's thread must not block: blocking work goes to a thread
// pool, and its result comes back through a gRPC operation's completion.
//
//   CompletionQueueLoop loop;
//   loop.OnStart([&] { /* request the first calls on loop.cq() */ });
//   runner.AddService(&service, &loop);   // ServerRunner attaches, starts, shuts down
//   ... stub->PrepareAsyncFoo(&ctx, req, loop.cq())->Finish(&resp, &status,
//           CompletionQueueLoop::NewTag([](bool ok) { ... }));

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/server_builder.h"

namespace overseer {

// Thread-safe, except that Attach, OnStart and Start are called once each, in that
// order, by one thread (the ServerRunner).
class CompletionQueueLoop {
 public:
  CompletionQueueLoop() = default;
  // Shuts the loop down (see Shutdown).
  ~CompletionQueueLoop();
  CompletionQueueLoop(const CompletionQueueLoop&) = delete;
  CompletionQueueLoop& operator=(const CompletionQueueLoop&) = delete;

  // A tag for an operation on cq(): when the operation completes, the loop's thread
  // runs `done(ok)` (ok as gRPC reports it) and frees the tag. Every tag given to
  // gRPC must complete exactly once, as gRPC guarantees for started operations.
  static void* NewTag(std::function<void(bool ok)> done);
  // Frees a tag that gRPC will never return, without running it: the
  // AsyncNotifyWhenDone tag of a call whose request completed !ok (the call never
  // started, and gRPC 1.51 returns that tag only for started calls, grpc/grpc#10136).
  static void FreeTag(void* tag);

  // Adds the queue to `builder`. Before the server is built.
  void Attach(grpc::ServerBuilder* builder);
  // Runs `callback` in Start, before the thread polls (a service requests its first
  // calls there). Before Start.
  void OnStart(std::function<void()> callback);
  // After the server is built: runs the OnStart callbacks and starts the thread.
  void Start();

  // The queue; null before Attach.
  grpc::ServerCompletionQueue* cq() const { return cq_.get(); }
  // True from Start until Shutdown begins: operations may be started on cq().
  bool running() const;

  // Work in flight that will still start operations on cq() (a step between its
  // arrival and its reply): Shutdown waits for every Hold to be Released first.
  void Hold();
  void Release();
  // Hold, unless Shutdown has begun (then false, and nothing is held): for work that
  // starts its own operations on cq() outside any call the loop serves.
  bool HoldIfRunning();

  // After the server has shut down (no new calls arrive): waits for the held work,
  // shuts the queue down, runs the completions still due and joins the thread.
  // Idempotent; a no-op for a loop never attached.
  void Shutdown();

 private:
  void Loop();

  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::vector<std::function<void()>> on_start_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  int held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_COMPLETION_QUEUE_LOOP_H_
