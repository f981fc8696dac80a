#ifndef OVERSEER_CORE_RPC_CALL_WATCH_H_
#define OVERSEER_CORE_RPC_CALL_WATCH_H_

// Tells a blocked synchronous gRPC handler that its call is over. gRPC's synchronous
// API has no notification when a client cancels, its deadline passes, its process
// dies, or the server's Shutdown deadline cancels the calls still running: the
// handler only sees it if it asks ServerContext::IsCancelled(). A handler that waits
// for something else (a tensor of a step, a readiness mark) holds a CallWatch for the
// wait; one process-wide thread asks every watched call every poll interval and runs
// its `on_cancel` once when the call is cancelled, so the wait can end.

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "grpcpp/server_context.h"

namespace overseer {

class CallWatch {
 public:
  // How often watched calls are asked; a cancelled call's on_cancel runs at most this
  // long after the cancellation.
  static constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

  // Watches `context` (which must outlive this object) until destruction. `on_cancel`
  // runs at most once, on the watcher thread, when the call is cancelled; it must not
  // block (cancel a CancellationManager, abort a step) and must not destroy this watch.
  CallWatch(grpc::ServerContext* context, std::function<void()> on_cancel);
  // Stops watching; if on_cancel is running, waits for it to return.
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // Calls watched right now (for tests and metrics).
  static int NumWatched();

 private:
  int64_t id_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_CALL_WATCH_H_
