#include "master/rpc/grpc_master_service.h"

#include <chrono>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "core/rpc/call_watch.h"
#include "core/rpc/grpc_status.h"

namespace overseer {

namespace {

// Requests the number of calls of each method that may wait on the loop's queue for
// its thread: one more is requested as each arrives.
constexpr int kRequestedCalls = 4;

// Every method of MasterService, with buckets for how long it takes: steps and quick
// calls, or calls that wait for the tasks (CreateSession waits up to
// --create_session_wait_seconds, WaitForReady up to --max_ready_wait_seconds).
std::shared_ptr<RpcMetrics> MasterRpcMetrics() {
  const std::vector<double> step = RpcMetrics::StepBuckets();
  const std::vector<double> slow = RpcMetrics::SlowBuckets();
  return std::make_shared<RpcMetrics>("master",
                                      std::vector<RpcMethodOptions>{{"CreateSession", slow},
                                                                    {"ExtendSession", step},
                                                                    {"RunStep", step},
                                                                    {"CloseSession", step},
                                                                    {"ListDevices", slow},
                                                                    {"Reset", slow},
                                                                    {"PartialRunSetup", step},
                                                                    {"MakeCallable", step},
                                                                    {"RunCallable", step},
                                                                    {"ReleaseCallable", step},
                                                                    {"MarkReady", slow},
                                                                    {"WithdrawReady", step},
                                                                    {"WaitForReady", slow},
                                                                    {"JobDone", slow}});
}

}  // namespace

GrpcMasterService::GrpcMasterService(MasterInterface* master, prometheus::Registry* metrics,
                                     CompletionQueueLoop* loop, MasterReadinessInterface* readiness)
    : master_(master),
      loop_(loop),
      readiness_(readiness != nullptr ? readiness
                                      : dynamic_cast<MasterReadinessInterface*>(master)),
      rpc_metrics_(MasterRpcMetrics()),
      create_session_(rpc_metrics_->method("CreateSession")),
      extend_session_(rpc_metrics_->method("ExtendSession")),
      run_step_(rpc_metrics_->method("RunStep")),
      close_session_(rpc_metrics_->method("CloseSession")),
      list_devices_(rpc_metrics_->method("ListDevices")),
      reset_(rpc_metrics_->method("Reset")),
      partial_run_setup_(rpc_metrics_->method("PartialRunSetup")),
      make_callable_(rpc_metrics_->method("MakeCallable")),
      run_callable_(rpc_metrics_->method("RunCallable")),
      release_callable_(rpc_metrics_->method("ReleaseCallable")),
      mark_ready_(rpc_metrics_->method("MarkReady")),
      withdraw_ready_(rpc_metrics_->method("WithdrawReady")),
      wait_for_ready_(rpc_metrics_->method("WaitForReady")),
      job_done_(rpc_metrics_->method("JobDone")) {
  steps_ = &prometheus::BuildCounter()
                .Name("overseer_master_steps_total")
                .Help("Steps run (RunStep and RunCallable), successful or not.")
                .Register(*metrics)
                .Add({});
  direct_steps_ = &prometheus::BuildCounter()
                       .Name("overseer_master_direct_steps_total")
                       .Help(
                           "Steps clients ran on a task themselves (RunStepResponse.direct), "
                           "as they report them.")
                       .Register(*metrics)
                       .Add({});
  step_latency_ = &prometheus::BuildHistogram()
                       .Name("overseer_master_step_latency_seconds")
                       .Help("Time from a step's arrival to its reply.")
                       .Register(*metrics)
                       .Add({}, prometheus::Histogram::BucketBoundaries{
                                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                    1, 2.5, 5, 10, 30});
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
  constexpr bool kRunStep = std::is_same_v<Request, RunStepRequest>;
  RpcMetrics::Method* method = kRunStep ? run_step_ : run_callable_;
  // A step can call back after this service is gone (the master ends steps still in
  // flight when it closes their sessions, after the server drained): `done` holds only
  // what outlives the service (the loop and the registry's counters, owned by the
  // server's runner, and the method metrics, shared with it).
  auto done = [call, method, rpc_metrics = rpc_metrics_, loop = loop_, steps = steps_,
               step_latency = step_latency_](absl::Status s) {
    const absl::Duration latency = absl::Now() - call->start;
    steps->Increment();
    step_latency->Observe(absl::ToDoubleSeconds(latency));
    method->Record(latency, s.code());
    call->Reply(loop, s);
  };
  if (absl::Status denied =
          Authorize(call->context, Permission::kMember, kRunStep ? "RunStep" : "RunCallable");
      !denied.ok()) {
    done(denied);
    return;
  }
  if constexpr (kRunStep) {
    if (call->request.direct_steps_run() > 0) {
      direct_steps_->Increment(static_cast<double>(call->request.direct_steps_run()));
    }
    if (ProcessSecurity().enabled()) call->request.set_direct_ok(false);
    master_->RunStepAsync(&call->request, call->response, &call->cancellation, done);
  } else {
    master_->RunCallableAsync(&call->request, call->response, &call->cancellation, done);
  }
}

grpc::Status GrpcMasterService::Finish(RpcMetrics::Method* method, absl::Time start,
                                       const absl::Status& status) {
  method->RecordSince(start, status);
  return ToGrpcStatus(status);
}

grpc::Status GrpcMasterService::CreateSession(grpc::ServerContext* context,
                                              const CreateSessionRequest* request,
                                              CreateSessionResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "CreateSession");
      !denied.ok()) {
    return Finish(create_session_, start, denied);
  }
  const absl::Time deadline = context->deadline() == std::chrono::system_clock::time_point::max()
                                  ? absl::InfiniteFuture()
                                  : absl::FromChrono(context->deadline());
  return Finish(create_session_, start,
                master_->CreateSessionWithDeadline(*request, response, deadline));
}
grpc::Status GrpcMasterService::ExtendSession(grpc::ServerContext* context,
                                              const ExtendSessionRequest* request,
                                              ExtendSessionResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "ExtendSession");
      !denied.ok()) {
    return Finish(extend_session_, start, denied);
  }
  return Finish(extend_session_, start, master_->ExtendSession(*request, response));
}
grpc::Status GrpcMasterService::CloseSession(grpc::ServerContext* context,
                                             const CloseSessionRequest* request,
                                             CloseSessionResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "CloseSession");
      !denied.ok()) {
    return Finish(close_session_, start, denied);
  }
  return Finish(close_session_, start, master_->CloseSession(*request, response));
}
grpc::Status GrpcMasterService::ListDevices(grpc::ServerContext* context,
                                            const ListDevicesRequest* request,
                                            ListDevicesResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "ListDevices"); !denied.ok()) {
    return Finish(list_devices_, start, denied);
  }
  return Finish(list_devices_, start, master_->ListDevices(*request, response));
}
grpc::Status GrpcMasterService::Reset(grpc::ServerContext* context, const ResetRequest* request,
                                      ResetResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kJobControl, "Reset"); !denied.ok()) {
    return Finish(reset_, start, denied);
  }
  return Finish(reset_, start, master_->Reset(*request, response));
}
grpc::Status GrpcMasterService::PartialRunSetup(grpc::ServerContext* context,
                                                const PartialRunSetupRequest* request,
                                                PartialRunSetupResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "PartialRunSetup");
      !denied.ok()) {
    return Finish(partial_run_setup_, start, denied);
  }
  return Finish(partial_run_setup_, start, master_->PartialRunSetup(*request, response));
}
grpc::Status GrpcMasterService::MakeCallable(grpc::ServerContext* context,
                                             const MakeCallableRequest* request,
                                             MakeCallableResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "MakeCallable");
      !denied.ok()) {
    return Finish(make_callable_, start, denied);
  }
  return Finish(make_callable_, start, master_->MakeCallable(*request, response));
}
grpc::Status GrpcMasterService::ReleaseCallable(grpc::ServerContext* context,
                                                const ReleaseCallableRequest* request,
                                                ReleaseCallableResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "ReleaseCallable");
      !denied.ok()) {
    return Finish(release_callable_, start, denied);
  }
  return Finish(release_callable_, start, master_->ReleaseCallable(*request, response));
}

grpc::Status GrpcMasterService::Readiness(
    const grpc::ServerContext& context, Permission permission, absl::string_view name,
    RpcMetrics::Method* method,
    const std::function<absl::Status(MasterReadinessInterface*)>& call) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(context, permission, name); !denied.ok()) {
    return Finish(method, start, denied);
  }
  if (readiness_ == nullptr) {
    return Finish(method, start,
                  absl::UnimplementedError(
                      "this master serves no readiness or job-end calls (built without a "
                      "MasterReadinessInterface)"));
  }
  return Finish(method, start, call(readiness_));
}

grpc::Status GrpcMasterService::MarkReady(grpc::ServerContext* context,
                                          const MarkReadyRequest* request,
                                          MarkReadyResponse* response) {
  return Readiness(*context, Permission::kMember, "MarkReady", mark_ready_,
                   [&](MasterReadinessInterface* r) { return r->MarkReady(*request, response); });
}
grpc::Status GrpcMasterService::WithdrawReady(grpc::ServerContext* context,
                                              const WithdrawReadyRequest* request,
                                              WithdrawReadyResponse* response) {
  return Readiness(
      *context, Permission::kMember, "WithdrawReady", withdraw_ready_,
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
  return Readiness(*context, Permission::kMember, "WaitForReady", wait_for_ready_,
                   [&](MasterReadinessInterface* r) {
                     return r->WaitForReadyCancellable(*request, response, &cancellation);
                   });
}
grpc::Status GrpcMasterService::JobDone(grpc::ServerContext* context, const JobDoneRequest* request,
                                        JobDoneResponse* response) {
  return Readiness(*context, Permission::kJobControl, "JobDone", job_done_,
                   [&](MasterReadinessInterface* r) { return r->JobDone(*request, response); });
}

}  // namespace overseer
