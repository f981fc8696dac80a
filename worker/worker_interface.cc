#include "worker/worker_interface.h"

#include <utility>

#include "core/executor/thread_pool.h"

namespace overseer {
namespace {

ThreadPool* RunGraphThreads() {
  static ThreadPool* pool = new ThreadPool(1);
  return pool;
}

}  // namespace

void WorkerInterface::RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                                    CancellationManager* cancellation,
                                    std::function<void(absl::Status)> done) {
  RunGraphThreads()->Schedule([this, request, response, cancellation, done = std::move(done)] {
    if (cancellation != nullptr && cancellation->IsCancelled()) {
      done(absl::CancelledError("RunGraph cancelled before it started"));
      return;
    }
    done(RunGraph(*request, response));
  });
}

}  // namespace overseer
