// The ReadinessChannel for "grpc://host:port" targets (registered with
// NewReadinessChannel when //client/session:grpc_session is linked), and SignalJobDone
// (client/session/job.h). Both talk to the master through GrpcMaster
// (MasterReadinessInterface).

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/session/job.h"
#include "client/session/readiness.h"
#include "core/clock.h"
#include "core/logging.h"
#include "core/rpc/grpc_target.h"
#include "core/rpc/retry.h"
#include "master/rpc/grpc_master.h"

namespace overseer {
namespace {

// The deadline of MarkReady, WithdrawReady and JobDone (the master asks every task
// with its own short deadline first).
constexpr absl::Duration kCallTimeout = absl::Seconds(30);

// Says which call on which master failed. A master that did not answer within the
// call's deadline, or that cancelled the call (it is shutting down; this client never
// cancels), counts as unreachable (UNAVAILABLE).
absl::Status OnMaster(const std::string& target, const std::string& what,
                      const absl::Status& status) {
  if (status.ok()) return status;
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::UnavailableError(absl::StrCat(what, ": the master at ", target,
                                               " did not answer in time: ", status.message()));
  }
  if (status.code() == absl::StatusCode::kCancelled) {
    return absl::UnavailableError(
        absl::StrCat(what, ": the master at ", target,
                     " cancelled the call (it is shutting down): ", status.message()));
  }
  return absl::Status(status.code(), absl::StrCat(what, " on ", target, ": ", status.message()));
}

// Thread-safe (GrpcMaster is).
class GrpcReadinessChannel : public ReadinessChannel {
 public:
  // `clock` (not owned, not null) measures WaitForReady's timeout and its pauses.
  GrpcReadinessChannel(std::string target, std::unique_ptr<GrpcMaster> master, Clock* clock)
      : target_(std::move(target)), master_(std::move(master)), clock_(clock) {}

  absl::Status MarkReady(const std::string& key,
                         const std::vector<std::string>& device_filters) override {
    MarkReadyRequest request;
    request.set_key(key);
    for (const std::string& f : device_filters) request.add_device_filters(f);
    MarkReadyResponse response;
    return OnMaster(target_, absl::StrCat("MarkReady('", key, "')"),
                    master_->MarkReady(request, &response));
  }

  absl::Status WithdrawReady(const std::string& key) override {
    WithdrawReadyRequest request;
    request.set_key(key);
    WithdrawReadyResponse response;
    return OnMaster(target_, absl::StrCat("WithdrawReady('", key, "')"),
                    master_->WithdrawReady(request, &response));
  }

  // The master bounds each call (60 s by default), so a longer wait takes several.
  absl::StatusOr<bool> WaitForReady(const std::string& key, absl::Duration timeout) override {
    const absl::Time deadline = clock_->Now() + std::max(timeout, absl::ZeroDuration());
    WaitForReadyRequest request;
    request.set_key(key);
    while (true) {
      const absl::Time start = clock_->Now();
      const absl::Duration left = std::max(deadline - start, absl::ZeroDuration());
      request.set_timeout_ms(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
      WaitForReadyResponse response;
      const absl::Status status = master_->WaitForReady(request, &response);
      if (!status.ok()) {
        return OnMaster(target_, absl::StrCat("WaitForReady('", key, "')"), status);
      }
      if (response.ready()) return true;
      const absl::Time now = clock_->Now();
      if (now >= deadline) {
        LOG(INFO) << "WaitForReady('" << key << "') on " << target_ << ": not ready after "
                  << absl::FormatDuration(timeout) << ": " << response.reason();
        return false;
      }
      // The master answered early (its cap, or it is shutting down). Waiting on is
      // what the caller asked for; a short pause keeps a master that keeps answering
      // early from being called in a tight loop.
      if (now - start < left / 2) {
        clock_->SleepFor(std::min(absl::Milliseconds(50), deadline - now));
      }
    }
  }

 private:
  const std::string target_;
  const std::unique_ptr<GrpcMaster> master_;
  Clock* const clock_;
};

absl::StatusOr<std::unique_ptr<GrpcMaster>> ConnectMaster(const std::string& target) {
  absl::StatusOr<std::string> address = ParseGrpcAddress(target);
  if (!address.ok()) return address.status();
  return std::make_unique<GrpcMaster>(NewMasterChannel(*address), kCallTimeout);
}

const bool kRegistered = [] {
  RegisterReadinessChannelFactory(
      std::string(kGrpcScheme),
      [](const std::string& target,
         Clock* clock) -> absl::StatusOr<std::unique_ptr<ReadinessChannel>> {
        absl::StatusOr<std::unique_ptr<GrpcMaster>> master = ConnectMaster(target);
        if (!master.ok()) return master.status();
        return std::unique_ptr<ReadinessChannel>(
            std::make_unique<GrpcReadinessChannel>(target, *std::move(master), clock));
      });
  return true;
}();

}  // namespace

absl::Status SignalJobDone(const std::string& target, const std::string& reason,
                           const std::vector<std::string>& device_filters) {
  if (target.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<GrpcMaster>> master = ConnectMaster(target);
  if (!master.ok()) return master.status();
  JobDoneRequest request;
  request.set_reason(reason);
  for (const std::string& f : device_filters) request.add_device_filters(f);
  Clock* clock = Clock::Real();
  const absl::Status status =
      RetryUnavailable(clock, RetryOptions(), clock->Now() + kCallTimeout, [&] {
        JobDoneResponse response;
        return OnMaster(target, "JobDone", (*master)->JobDone(request, &response));
      });
  if (status.ok()) LOG(INFO) << "told the cluster of " << target << " that the job is done";
  return status;
}

}  // namespace overseer
