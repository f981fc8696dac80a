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

void MasterInterface::RunStepAsync(const RunStepRequest* request,
                                   std::shared_ptr<RunStepResponse> response, CancellationManager*,
                                   std::function<void(absl::Status)> done) {
  SyncMasterThreads()->Schedule(
      [this, request, response = std::move(response), done = std::move(done)] {
        done(RunStep(*request, response.get()));
      });
}

absl::Status MasterInterface::PartialRunSetup(const PartialRunSetupRequest&,
                                              PartialRunSetupResponse*) {
  return absl::UnimplementedError("this master does not support partial runs");
}

void MasterInterface::RunCallableAsync(const RunCallableRequest* request,
                                       std::shared_ptr<RunCallableResponse> response,
                                       CancellationManager*,
                                       std::function<void(absl::Status)> done) {
  SyncMasterThreads()->Schedule(
      [this, request, response = std::move(response), done = std::move(done)] {
        done(RunCallable(*request, response.get()));
      });
}

bool DirectStepOptions(const RunOptions& options) {
  RunOptions rest = options;
  rest.clear_timeout_in_ms();
  return rest.ByteSizeLong() == 0;
}

}  // namespace overseer
