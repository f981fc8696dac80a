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

void WorkerInterface::RecvTensorAsync(const RecvTensorRequest& request,
                                      CancellationManager* cancellation,
                                      std::function<void(absl::StatusOr<Tensor>)> done) {
  RunGraphThreads()->Schedule([this, request, cancellation, done = std::move(done)] {
    if (cancellation != nullptr && cancellation->IsCancelled()) {
      done(absl::CancelledError("RecvTensor cancelled before it started"));
      return;
    }
    Tensor tensor;
    absl::Status status = RecvTensor(request, cancellation, &tensor);
    if (!status.ok()) {
      done(std::move(status));
    } else {
      done(std::move(tensor));
    }
  });
}

}  // namespace overseer
