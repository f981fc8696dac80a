#include "worker/rpc/grpc_worker_service.h"

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/rpc/call_watch.h"
#include "core/rpc/grpc_status.h"
#include "core/rpc/security.h"
#include "grpcpp/support/method_handler.h"
#include "worker/rpc/tensor_chunks.h"

namespace overseer {
namespace {

// The index of RecvTensor among WorkerService's methods (their order in
// proto/worker.proto), which is served by hand (tensor_chunks.h).
constexpr int kRecvTensorMethodIndex = 8;
// RunGraph calls that may wait on the loop's queue for its thread: one more is
// requested as each arrives.
constexpr int kRequestedRunGraphs = 4;

// Every method of WorkerService: RunGraph and RecvTensor are on the path of every step
// (RecvTensor waits for its producer, bounded by the step); CreateWorkerSession,
// RegisterGraph and CleanupAll may take a while.
std::shared_ptr<RpcMetrics> WorkerRpcMetrics() {
  const std::vector<double> step = RpcMetrics::StepBuckets();
  const std::vector<double> slow = RpcMetrics::SlowBuckets();
  return std::make_shared<RpcMetrics>("worker",
                                      std::vector<RpcMethodOptions>{{"GetStatus", step},
                                                                    {"CreateWorkerSession", slow},
                                                                    {"DeleteWorkerSession", step},
                                                                    {"RegisterGraph", slow},
                                                                    {"DeregisterGraph", step},
                                                                    {"RunGraph", step},
                                                                    {"CleanupGraph", step},
                                                                    {"CleanupAll", slow},
                                                                    {"RecvTensor", step},
                                                                    {"JobDone", step}});
}

}  // namespace

GrpcWorkerService::GrpcWorkerService(Worker* worker, prometheus::Registry* metrics,
                                     CompletionQueueLoop* loop, int64_t chunk_bytes,
                                     LocalTransferServer* local)
    : worker_(worker),
      loop_(loop),
      chunk_bytes_(chunk_bytes),
      local_(local),
      rpc_metrics_(WorkerRpcMetrics()),
      get_status_(rpc_metrics_->method("GetStatus")),
      create_worker_session_(rpc_metrics_->method("CreateWorkerSession")),
      delete_worker_session_(rpc_metrics_->method("DeleteWorkerSession")),
      register_graph_(rpc_metrics_->method("RegisterGraph")),
      deregister_graph_(rpc_metrics_->method("DeregisterGraph")),
      run_graph_(rpc_metrics_->method("RunGraph")),
      cleanup_graph_(rpc_metrics_->method("CleanupGraph")),
      cleanup_all_(rpc_metrics_->method("CleanupAll")),
      recv_tensor_method_(rpc_metrics_->method("RecvTensor")),
      job_done_(rpc_metrics_->method("JobDone")),
      run_graph_threads_(1) {
  loop_->OnStart([this] {
    for (int i = 0; i < kRequestedRunGraphs; ++i) {
      // A call the master gives up on (it died, cancelled, or its deadline passed) ends
      // its step here as CleanupGraph would end it, waking the executor and the peers'
      // RecvTensor calls waiting on this task, since no CleanupGraph may come.
      AwaitUnaryCall<RunGraphRequest, RunGraphResponse>(
          loop_,
          [this](grpc::ServerContext* context, RunGraphRequest* request,
                 grpc::ServerAsyncResponseWriter<RunGraphResponse>* responder, void* tag) {
            RequestRunGraph(context, request, responder, loop_->cq(), loop_->cq(), tag);
          },
          "the RunGraph call was cancelled (the master gave up or the worker is stopping)",
          [this](RunGraphCall* call) { Serve(call); });
    }
  });
  MarkMethodStreamed(
      kRecvTensorMethodIndex,
      new grpc::internal::SplitServerStreamingHandler<RecvTensorRequest, grpc::ByteBuffer>(
          [this](grpc::ServerContext* context,
                 grpc::ServerSplitStreamer<RecvTensorRequest, grpc::ByteBuffer>* stream) {
            return StreamTensor(context, stream);
          }));
  if (metrics == nullptr) return;
  auto& rungraph = prometheus::BuildCounter()
                       .Name("overseer_worker_rungraph_total")
                       .Help(
                           "RunGraph calls, by where they ran: thread=\"loop\" on the thread "
                           "that reads the calls (quick graphs that never wait), "
                           "thread=\"pool\" on a thread of their own")
                       .Register(*metrics);
  rungraph_on_loop_ = &rungraph.Add({{"thread", "loop"}});
  rungraph_on_pool_ = &rungraph.Add({{"thread", "pool"}});
  recv_tensor_ = &prometheus::BuildCounter()
                      .Name("overseer_worker_recv_tensor_total")
                      .Help("RecvTensor calls served")
                      .Register(*metrics)
                      .Add({});
  recv_tensor_waiting_ = &prometheus::BuildGauge()
                              .Name("overseer_worker_recv_tensor_waiting")
                              .Help(
                                  "RecvTensor calls waiting now for their tensor to be "
                                  "produced (each holds a server thread)")
                              .Register(*metrics)
                              .Add({});
  recv_tensor_bytes_ = &prometheus::BuildCounter()
                            .Name("overseer_worker_recv_tensor_bytes_total")
                            .Help("Tensor element bytes sent by RecvTensor")
                            .Register(*metrics)
                            .Add({});
  recv_tensor_local_ = &prometheus::BuildCounter()
                            .Name("overseer_worker_recv_tensor_local_total")
                            .Help(
                                "RecvTensor calls whose tensor went over the local transfer "
                                "socket to a caller on the same host")
                            .Register(*metrics)
                            .Add({});
  resource_bytes_ = &prometheus::BuildGauge()
                         .Name("overseer_worker_resource_bytes")
                         .Help("Bytes held by the worker's resource containers")
                         .Register(*metrics)
                         .Add({});
}

grpc::Status GrpcWorkerService::Done(RpcMetrics::Method* method, absl::Time start,
                                     const absl::Status& status) {
  method->RecordSince(start, status);
  return ToGrpcStatus(status);
}

void GrpcWorkerService::UpdateResourceBytes() {
  if (resource_bytes_ != nullptr) {
    resource_bytes_->Set(static_cast<double>(worker_->resource_mgr()->MemoryUsed()));
  }
}

grpc::Status GrpcWorkerService::GetStatus(grpc::ServerContext* context,
                                          const GetStatusRequest* request,
                                          GetStatusResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "GetStatus"); !denied.ok()) {
    return Done(get_status_, start, denied);
  }
  return Done(get_status_, start, worker_->GetStatus(*request, response));
}

grpc::Status GrpcWorkerService::CreateWorkerSession(grpc::ServerContext* context,
                                                    const CreateWorkerSessionRequest* request,
                                                    CreateWorkerSessionResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMaster, "CreateWorkerSession");
      !denied.ok()) {
    return Done(create_worker_session_, start, denied);
  }
  return Done(create_worker_session_, start, worker_->CreateWorkerSession(*request, response));
}

grpc::Status GrpcWorkerService::DeleteWorkerSession(grpc::ServerContext* context,
                                                    const DeleteWorkerSessionRequest* request,
                                                    DeleteWorkerSessionResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMaster, "DeleteWorkerSession");
      !denied.ok()) {
    return Done(delete_worker_session_, start, denied);
  }
  return Done(delete_worker_session_, start, worker_->DeleteWorkerSession(*request, response));
}

grpc::Status GrpcWorkerService::RegisterGraph(grpc::ServerContext* context,
                                              const RegisterGraphRequest* request,
                                              RegisterGraphResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMaster, "RegisterGraph");
      !denied.ok()) {
    return Done(register_graph_, start, denied);
  }
  return Done(register_graph_, start, worker_->RegisterGraph(*request, response));
}

grpc::Status GrpcWorkerService::DeregisterGraph(grpc::ServerContext* context,
                                                const DeregisterGraphRequest* request,
                                                DeregisterGraphResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMaster, "DeregisterGraph");
      !denied.ok()) {
    return Done(deregister_graph_, start, denied);
  }
  return Done(deregister_graph_, start, worker_->DeregisterGraph(*request, response));
}

void GrpcWorkerService::Serve(RunGraphCall* call) {
  if (absl::Status denied = Authorize(call->context, Permission::kMaster, "RunGraph");
      !denied.ok()) {
    run_graph_->RecordSince(call->start, denied);
    call->Reply(loop_, denied);
    return;
  }
  absl::StatusOr<Worker::FoundGraph> found = worker_->FindGraph(call->request);
  if (!found.ok() || worker_->IsQuick(*found)) {
    // Nothing to wait for and done in a moment (or an unknown graph): on the loop's
    // thread, no other thread woken (the call cannot be given up meanwhile: its end is
    // read by this thread).
    if (rungraph_on_loop_ != nullptr) rungraph_on_loop_->Increment();
    RunGraphAndReply(call, found, nullptr);
  } else {
    if (rungraph_on_pool_ != nullptr) rungraph_on_pool_->Increment();
    run_graph_threads_.Schedule([this, call, found = *std::move(found)] {
      RunGraphAndReply(call, found, &call->cancellation);
    });
  }
}

void GrpcWorkerService::RunGraphAndReply(RunGraphCall* call,
                                         const absl::StatusOr<Worker::FoundGraph>& found,
                                         CancellationManager* cancellation) {
  const absl::Status status =
      found.ok() ? worker_->RunGraph(*found, call->request, &call->response, cancellation)
                 : found.status();
  UpdateResourceBytes();
  run_graph_->RecordSince(call->start, status);
  call->Reply(loop_, status);
}

grpc::Status GrpcWorkerService::CleanupGraph(grpc::ServerContext* context,
                                             const CleanupGraphRequest* request,
                                             CleanupGraphResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMaster, "CleanupGraph");
      !denied.ok()) {
    return Done(cleanup_graph_, start, denied);
  }
  return Done(cleanup_graph_, start, worker_->CleanupGraph(*request, response));
}

grpc::Status GrpcWorkerService::CleanupAll(grpc::ServerContext* context,
                                           const CleanupAllRequest* request,
                                           CleanupAllResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMaster, "CleanupAll"); !denied.ok()) {
    return Done(cleanup_all_, start, denied);
  }
  const absl::Status status = worker_->CleanupAll(*request, response);
  UpdateResourceBytes();
  return Done(cleanup_all_, start, status);
}

grpc::Status GrpcWorkerService::JobDone(grpc::ServerContext* context, const JobDoneRequest* request,
                                        JobDoneResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMaster, "JobDone"); !denied.ok()) {
    return Done(job_done_, start, denied);
  }
  return Done(job_done_, start, worker_->JobDone(*request, response));
}

grpc::Status GrpcWorkerService::StreamTensor(
    grpc::ServerContext* context,
    grpc::ServerSplitStreamer<RecvTensorRequest, grpc::ByteBuffer>* stream) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "StreamTensor");
      !denied.ok()) {
    return Done(recv_tensor_method_, start, denied);
  }
  if (recv_tensor_ != nullptr) recv_tensor_->Increment();
  RecvTensorRequest bounded;
  if (!stream->Read(&bounded)) {
    return Done(recv_tensor_method_, start,
                absl::InvalidArgumentError("RecvTensor carried no request"));
  }
  // Wait no longer than the caller does.
  const absl::Time deadline = absl::FromChrono(context->deadline());
  if (deadline < absl::Now() + absl::Hours(24 * 365)) {  // Else: no deadline.
    const int64_t left_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (bounded.timeout_in_ms() <= 0 || bounded.timeout_in_ms() > left_ms) {
      bounded.set_timeout_in_ms(left_ms);
    }
  }
  Tensor tensor;
  absl::Status status;
  {
    // The peer gave up (its step was cancelled, it died): stop waiting for the tensor.
    CancellationManager cancellation;
    CallWatch watch(context, [&cancellation] {
      cancellation.StartCancel(absl::CancelledError("the RecvTensor call was cancelled"));
    });
    if (recv_tensor_waiting_ != nullptr) recv_tensor_waiting_->Increment();
    status = worker_->RecvTensor(bounded, &cancellation, &tensor);
    if (recv_tensor_waiting_ != nullptr) recv_tensor_waiting_->Decrement();
  }
  if (status.ok()) status = SendTensor(context, bounded, tensor, stream);
  return Done(recv_tensor_method_, start, status);
}

absl::Status GrpcWorkerService::SendTensor(
    grpc::ServerContext* context, const RecvTensorRequest& request, const Tensor& tensor,
    grpc::ServerSplitStreamer<RecvTensorRequest, grpc::ByteBuffer>* stream) {
  const absl::string_view bytes = RawTensorBytes(tensor);
  LocalTransferFields local;
  std::string token;
  if (local_ != nullptr) {
    local.socket = local_->address();
    if (request.accept_local() && static_cast<int64_t>(bytes.size()) >= kLocalTransferMinBytes) {
      absl::StatusOr<std::string> t = local_->NewToken();
      if (t.ok()) token = *std::move(t);  // Else: the stream carries the bytes.
      local.token = token;
    }
  }
  int64_t sent = 0;
  absl::Status status = WriteTensorChunks(
      tensor, chunk_bytes_,
      [&](grpc::ByteBuffer chunk, int64_t content_bytes, bool last) {
        sent += content_bytes;
        // A whole small tensor goes out with the call's status, in one write: the
        // caller's Read of it and its Finish then wait once, not twice. (A message that
        // references the tensor's buffer is not held back: its reference would then
        // be released on one of gRPC's threads, after the handler returned.)
        if (last) return stream->Write(chunk, grpc::WriteOptions().set_last_message());
        return stream->Write(chunk);
      },
      local);
  if (!token.empty()) {
    if (!status.ok()) {
      local_->Drop(token);
    } else {
      // The caller connects with the token; its going away ends the wait.
      CallWatch watch(context, [this, &token] { local_->Forget(token); });
      absl::StatusOr<UniqueFd> connection = local_->Await(
          token,
          std::min(absl::FromChrono(context->deadline()), absl::Now() + kLocalTransferTimeout));
      status = connection.ok() ? SendLocalTransfer(connection->get(), bytes) : connection.status();
      if (status.ok()) {
        sent = static_cast<int64_t>(bytes.size());
        if (recv_tensor_local_ != nullptr) recv_tensor_local_->Increment();
      }
    }
  }
  if (recv_tensor_bytes_ != nullptr) recv_tensor_bytes_->Increment(static_cast<double>(sent));
  return status;
}

}  // namespace overseer
