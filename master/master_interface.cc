#include "master/master_interface.h"

#include <utility>

#include "core/executor/thread_pool.h"

namespace overseer {
namespace {

ThreadPool* SyncMasterThreads() {
  static ThreadPool* pool = new ThreadPool(1);
  return pool;
}

}  // namespace

void MasterInterface::RunStepAsync(const RunStepRequest* request, RunStepResponse* response,
                                   CancellationManager*, std::function<void(absl::Status)> done) {
  SyncMasterThreads()->Schedule(
      [this, request, response, done = std::move(done)] { done(RunStep(*request, response)); });
}

absl::Status MasterInterface::PartialRunSetup(const PartialRunSetupRequest&,
                                              PartialRunSetupResponse*) {
  return absl::UnimplementedError("this master does not support partial runs");
}

void MasterInterface::RunCallableAsync(const RunCallableRequest* request,
                                       RunCallableResponse* response, CancellationManager*,
                                       std::function<void(absl::Status)> done) {
  SyncMasterThreads()->Schedule(
      [this, request, response, done = std::move(done)] { done(RunCallable(*request, response)); });
}

}  // namespace overseer
