#include "master/rpc/grpc_master_service.h"

#include <atomic>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "core/rpc/call_watch.h"
#include "core/rpc/grpc_status.h"

namespace overseer {

// One RunStep or RunCallable call, from its arrival to its end. gRPC completes two
// operations of an arrived call on the loop: the reply (Finish) and the call's end
// (AsyncNotifyWhenDone, which also says whether it was cancelled); the last frees it.
template <typename Request, typename Response>
struct GrpcMasterService::StepCall {
  grpc::ServerContext context;
  Request request;
  Response response;
  grpc::ServerAsyncResponseWriter<Response> responder{&context};
  CancellationManager cancellation;
  absl::Time start;
  std::atomic<int> pending{2};

  // One of the two operations completed.
  void Unref(CompletionQueueLoop* loop) {
    if (pending.fetch_sub(1) == 1) {
      delete this;
      loop->Release();
    }
  }
};

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
      AwaitRunStep();
      AwaitRunCallable();
    }
  });
}

void GrpcMasterService::AwaitRunStep() {
  using Call = StepCall<RunStepRequest, RunStepResponse>;
  auto* call = new Call;
  call->context.AsyncNotifyWhenDone(CompletionQueueLoop::NewTag([loop = loop_, call](bool) {
    if (call->context.IsCancelled()) {
      call->cancellation.StartCancel(absl::CancelledError(
          "the RunStep call was cancelled (the client gave up or the master is stopping)"));
    }
    call->Unref(loop);
  }));
  // When the server shuts down, the request completes with !ok, perhaps after this
  // service is gone: then only the call is freed.
  RequestRunStep(&call->context, &call->request, &call->responder, loop_->cq(), loop_->cq(),
                 CompletionQueueLoop::NewTag([this, call](bool ok) {
                   if (!ok) {
                     delete call;
                     return;
                   }
                   AwaitRunStep();
                   Serve(call);
                 }));
}

void GrpcMasterService::AwaitRunCallable() {
  using Call = StepCall<RunCallableRequest, RunCallableResponse>;
  auto* call = new Call;
  call->context.AsyncNotifyWhenDone(CompletionQueueLoop::NewTag([loop = loop_, call](bool) {
    if (call->context.IsCancelled()) {
      call->cancellation.StartCancel(absl::CancelledError(
          "the RunCallable call was cancelled (the client gave up or the master is stopping)"));
    }
    call->Unref(loop);
  }));
  RequestRunCallable(
      &call->context, &call->request, &call->responder, loop_->cq(), loop_->cq(),
      CompletionQueueLoop::NewTag([this, call](bool ok) {
        if (!ok) {
          delete call;
          return;
        }
        AwaitRunCallable();
        Serve(call);
      }));
}

template <typename Request, typename Response>
void GrpcMasterService::Serve(StepCall<Request, Response>* call) {
  loop_->Hold();
  call->start = absl::Now();
  auto done = [this, call](absl::Status s) {
    StepDone(call->start, s);
    if (s.ok()) {
      call->responder.Finish(call->response, grpc::Status::OK,
                             CompletionQueueLoop::NewTag([loop = loop_, call](bool) { call->Unref(loop); }));
    } else {
      call->responder.FinishWithError(
          ToGrpcStatus(s),
          CompletionQueueLoop::NewTag([loop = loop_, call](bool) { call->Unref(loop); }));
    }
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
