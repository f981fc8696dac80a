#include "master/rpc/grpc_master_service.h"

#include <type_traits>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "core/rpc/call_watch.h"
#include "core/rpc/grpc_status.h"

namespace overseer {

namespace {

// Requests the number of calls of each method that may wait on the loop's queue for
// its thread: one more is requested as each arrives.
constexpr int kRequestedCalls = 4;

}  // namespace

GrpcMasterService::GrpcMasterService(MasterInterface* master, prometheus::Registry* metrics,
                                     std::function<int()> open_sessions,
                                     CompletionQueueLoop* loop,
                                     MasterReadinessInterface* readiness)
    : master_(master),
      loop_(loop),
      readiness_(readiness != nullptr ? readiness
                                      : dynamic_cast<MasterReadinessInterface*>(master)),
      open_sessions_(std::move(open_sessions)) {
  steps_ = &prometheus::BuildCounter()
                .Name("overseer_master_steps_total")
                .Help("Steps run (RunStep and RunCallable), successful or not.")
                .Register(*metrics)
                .Add({});
  step_latency_ = &prometheus::BuildHistogram()
                       .Name("overseer_master_step_latency_seconds")
                       .Help("Time from a step's arrival to its reply.")
                       .Register(*metrics)
                       .Add({}, prometheus::Histogram::BucketBoundaries{
                                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                    0.25, 0.5, 1, 2.5, 5, 10, 30});
  rpc_errors_ = &prometheus::BuildCounter()
                     .Name("overseer_master_rpc_errors_total")
                     .Help("Master RPCs that failed, by status code.")
                     .Register(*metrics);
  sessions_open_ = &prometheus::BuildGauge()
                        .Name("overseer_master_sessions_open")
                        .Help("Sessions open on the master.")
                        .Register(*metrics)
                        .Add({});
  loop_->OnStart([this] {
    for (int i = 0; i < kRequestedCalls; ++i) {
      AwaitUnaryCall<RunStepRequest, RunStepResponse>(
          loop_,
          [this](grpc::ServerContext* context, RunStepRequest* request,
                 grpc::ServerAsyncResponseWriter<RunStepResponse>* responder, void* tag) {
            RequestRunStep(context, request, responder, loop_->cq(), loop_->cq(), tag);
          },
          "the RunStep call was cancelled (the client gave up or the master is stopping)",
          [this](auto* call) { Serve(call); });
      AwaitUnaryCall<RunCallableRequest, RunCallableResponse>(
          loop_,
          [this](grpc::ServerContext* context, RunCallableRequest* request,
                 grpc::ServerAsyncResponseWriter<RunCallableResponse>* responder, void* tag) {
            RequestRunCallable(context, request, responder, loop_->cq(), loop_->cq(), tag);
          },
          "the RunCallable call was cancelled (the client gave up or the master is stopping)",
          [this](auto* call) { Serve(call); });
    }
  });
}

template <typename Request, typename Response>
void GrpcMasterService::Serve(AsyncUnaryCall<Request, Response>* call) {
  auto done = [this, call](absl::Status s) {
    StepDone(call->start, s);
    call->Reply(loop_, s);
  };
  if constexpr (std::is_same_v<Request, RunStepRequest>) {
    master_->RunStepAsync(&call->request, &call->response, &call->cancellation, done);
  } else {
    master_->RunCallableAsync(&call->request, &call->response, &call->cancellation, done);
  }
}

grpc::Status GrpcMasterService::Finish(const absl::Status& status) {
  if (!status.ok()) {
    rpc_errors_->Add({{"code", absl::StatusCodeToString(status.code())}}).Increment();
  }
  if (open_sessions_) sessions_open_->Set(open_sessions_());
  return ToGrpcStatus(status);
}

void GrpcMasterService::StepDone(absl::Time start, const absl::Status& status) {
  steps_->Increment();
  step_latency_->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  Finish(status);
}

grpc::Status GrpcMasterService::CreateSession(grpc::ServerContext*,
                                              const CreateSessionRequest* request,
                                              CreateSessionResponse* response) {
  return Finish(master_->CreateSession(*request, response));
}
grpc::Status GrpcMasterService::ExtendSession(grpc::ServerContext*,
                                              const ExtendSessionRequest* request,
                                              ExtendSessionResponse* response) {
  return Finish(master_->ExtendSession(*request, response));
}
grpc::Status GrpcMasterService::CloseSession(grpc::ServerContext*,
                                             const CloseSessionRequest* request,
                                             CloseSessionResponse* response) {
  return Finish(master_->CloseSession(*request, response));
}
grpc::Status GrpcMasterService::ListDevices(grpc::ServerContext*,
                                            const ListDevicesRequest* request,
                                            ListDevicesResponse* response) {
  return Finish(master_->ListDevices(*request, response));
}
grpc::Status GrpcMasterService::Reset(grpc::ServerContext*, const ResetRequest* request,
                                      ResetResponse* response) {
  return Finish(master_->Reset(*request, response));
}
grpc::Status GrpcMasterService::MakeCallable(grpc::ServerContext*,
                                             const MakeCallableRequest* request,
                                             MakeCallableResponse* response) {
  return Finish(master_->MakeCallable(*request, response));
}
grpc::Status GrpcMasterService::ReleaseCallable(grpc::ServerContext*,
                                                const ReleaseCallableRequest* request,
                                                ReleaseCallableResponse* response) {
  return Finish(master_->ReleaseCallable(*request, response));
}

grpc::Status GrpcMasterService::Readiness(
    const std::function<absl::Status(MasterReadinessInterface*)>& call) {
  if (readiness_ == nullptr) {
    return Finish(absl::UnimplementedError(
        "this master serves no readiness or job-end calls (built without a "
        "MasterReadinessInterface)"));
  }
  return Finish(call(readiness_));
}

grpc::Status GrpcMasterService::MarkReady(grpc::ServerContext*, const MarkReadyRequest* request,
                                          MarkReadyResponse* response) {
  return Readiness([&](MasterReadinessInterface* r) { return r->MarkReady(*request, response); });
}
grpc::Status GrpcMasterService::WithdrawReady(grpc::ServerContext*,
                                              const WithdrawReadyRequest* request,
                                              WithdrawReadyResponse* response) {
  return Readiness(
      [&](MasterReadinessInterface* r) { return r->WithdrawReady(*request, response); });
}
grpc::Status GrpcMasterService::WaitForReady(grpc::ServerContext* context,
                                             const WaitForReadyRequest* request,
                                             WaitForReadyResponse* response) {
  // A client that gives up (cancels, passes its deadline, dies) ends the wait.
  CancellationManager cancellation;
  CallWatch watch(context, [&cancellation] {
    cancellation.StartCancel(absl::CancelledError("the WaitForReady call was cancelled"));
  });
  return Readiness([&](MasterReadinessInterface* r) {
    return r->WaitForReadyCancellable(*request, response, &cancellation);
  });
}
grpc::Status GrpcMasterService::JobDone(grpc::ServerContext*, const JobDoneRequest* request,
                                        JobDoneResponse* response) {
  return Readiness([&](MasterReadinessInterface* r) { return r->JobDone(*request, response); });
}

}  // namespace overseer
