#include "worker/rpc/grpc_worker_service.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/rendezvous.h"
#include "core/rpc/grpc_status.h"
#include "core/rpc/security.h"
#include "core/status_macros.h"
#include "worker/rpc/tensor_chunks.h"

namespace overseer {
namespace {

// The index of RecvTensor among WorkerService's methods (their order in
// proto/worker.proto), which is served by hand (tensor_chunks.h).
constexpr int kRecvTensorMethodIndex = 8;
// RunGraph calls that may wait on the loop's queue for its thread: one more is
// requested as each arrives.
constexpr int kRequestedRunGraphs = 4;
// The same for RecvTensor calls (a step may send several to a task at once).
constexpr int kRequestedRecvTensors = 8;

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
    for (int i = 0; i < kRequestedRecvTensors; ++i) {
      // A caller that gives up (its step was cancelled, it died) ends the wait for its
      // tensor.
      AwaitCall<RecvTensorCall>(
          loop_,
          [this](grpc::ServerContext* context, RecvTensorRequest* request,
                 grpc::ServerAsyncWriter<grpc::ByteBuffer>* responder, void* tag) {
            RequestAsyncServerStreaming(kRecvTensorMethodIndex, context, request, responder,
                                        loop_->cq(), loop_->cq(), tag);
          },
          "the RecvTensor call was cancelled", [this](RecvTensorCall* call) { Serve(call); });
    }
  });
  MarkMethodAsync(kRecvTensorMethodIndex);
  if (metrics == nullptr) return;
  auto& rungraph = prometheus::BuildCounter()
                       .Name("overseer_worker_rungraph_total")
                       .Help(
                           "RunGraph calls, by where they ran: thread=\"loop\" on the thread "
                           "that reads the calls (quick graphs that never wait), "
                           "thread=\"async\" started there, with no thread held while "
                           "they wait (graphs whose only waits are for tensors from other "
                           "tasks), thread=\"pool\" on a thread of their own")
                       .Register(*metrics);
  rungraph_on_loop_ = &rungraph.Add({{"thread", "loop"}});
  rungraph_async_ = &rungraph.Add({{"thread", "async"}});
  rungraph_on_pool_ = &rungraph.Add({{"thread", "pool"}});
  rungraph_local_ = &prometheus::BuildCounter()
                         .Name("overseer_worker_rungraph_local_total")
                         .Help(
                             "RunGraph calls that came over the local call socket from a "
                             "caller on the same host (counted in "
                             "overseer_worker_rungraph_total too)")
                         .Register(*metrics)
                         .Add({});
  auto& recv_tensor = prometheus::BuildCounter()
                          .Name("overseer_worker_recv_tensor_total")
                          .Help(
                              "RecvTensor calls served, by where: thread=\"loop\" on the thread "
                              "that reads the calls (a tensor already produced, streamed), "
                              "thread=\"producer\" from the thread that produced the tensor "
                              "(the call waited for it without a thread), thread=\"pool\" on a "
                              "thread of their own (a call that waited before its step ran "
                              "here, or sends over the local transfer socket)")
                          .Register(*metrics);
  recv_tensor_on_loop_ = &recv_tensor.Add({{"thread", "loop"}});
  recv_tensor_by_producer_ = &recv_tensor.Add({{"thread", "producer"}});
  recv_tensor_on_pool_ = &recv_tensor.Add({{"thread", "pool"}});
  recv_tensor_waiting_ = &prometheus::BuildGauge()
                              .Name("overseer_worker_recv_tensor_waiting")
                              .Help(
                                  "RecvTensor calls waiting now for their tensor to be "
                                  "produced")
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

GrpcWorkerService::~GrpcWorkerService() {
  local_calls_.reset();  // Closes its connections: the steps of their calls are cancelled.
  absl::MutexLock lock(&local_in_flight_->mu);
  local_in_flight_->mu.Await(absl::Condition(local_in_flight_.get(), &LocalCallsInFlight::Idle));
}

absl::Status GrpcWorkerService::ServeLocalCalls(const std::string& address) {
  if (ProcessSecurity().enabled()) {
    return absl::FailedPreconditionError(
        "local calls are off with security on: their socket cannot authenticate callers");
  }
  if (local_calls_ != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("local calls are served already, on ", local_calls_->address()));
  }
  ASSIGN_OR_RETURN(local_calls_,
                   LocalCallServer::Start(address, [this](std::shared_ptr<LocalCall> call) {
                     ServeLocal(std::move(call));
                   }));
  return absl::OkStatus();
}

std::string GrpcWorkerService::local_calls_address() const {
  return local_calls_ != nullptr ? local_calls_->address() : std::string();
}

int GrpcWorkerService::local_call_connections() const {
  return local_calls_ != nullptr ? local_calls_->connections() : 0;
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
  // Callers on this host send their later calls to the local call socket.
  if (local_calls_ != nullptr) {
    call->context.AddInitialMetadata(kLocalCallsMetadataKey, local_calls_->address());
  }
  RunGraphWhereItFits(call->request, call->response.get(), &call->cancellation,
                      [this, call](absl::Status status) { Replied(call, status); });
}

void GrpcWorkerService::RunGraphWhereItFits(const RunGraphRequest& request,
                                            RunGraphResponse* response,
                                            CancellationManager* cancellation,
                                            std::function<void(absl::Status)> reply) {
  absl::StatusOr<Worker::FoundGraph> found = worker_->FindGraph(request);
  if (!found.ok() || worker_->IsQuick(*found)) {
    // Nothing to wait for and done in a moment (or an unknown graph): on this thread, no
    // other thread woken (the call cannot be given up meanwhile: its end is read by this
    // thread).
    if (rungraph_on_loop_ != nullptr) rungraph_on_loop_->Increment();
    reply(found.ok() ? worker_->RunGraph(*found, request, response, nullptr) : found.status());
  } else if (!request.is_partial() && worker_->RunsWithoutWaiting(*found)) {
    // Its only waits hold no thread (a _Recv from another task): started here, its
    // other nodes on the worker's pool, and replied to from the thread that ends it.
    if (rungraph_async_ != nullptr) rungraph_async_->Increment();
    worker_->RunFoundGraphAsync(*found, request, response, cancellation, std::move(reply));
  } else {
    if (rungraph_on_pool_ != nullptr) rungraph_on_pool_->Increment();
    run_graph_threads_.Schedule([this, &request, response, cancellation, found = *std::move(found),
                                 reply = std::move(reply)] {
      reply(worker_->RunGraph(found, request, response, cancellation));
    });
  }
}

void GrpcWorkerService::ServeLocal(std::shared_ptr<LocalCall> call) {
  const absl::Time start = absl::Now();
  if (call->method() != kLocalRunGraphMethod) {
    call->Reply(absl::UnimplementedError(absl::StrCat(
        "no local method ", call->method(), " (RunGraph is ", kLocalRunGraphMethod, ")")));
    return;
  }
  // The call's request and response, alive until its reply.
  struct LocalRunGraph {
    std::shared_ptr<LocalCall> call;
    RunGraphRequest request;
    RunGraphResponse response;
  };
  auto run = std::make_shared<LocalRunGraph>();
  if (!run->request.ParseFromString(call->request())) {
    const absl::Status bad =
        absl::InvalidArgumentError("a RunGraph request on the local call socket did not parse");
    run_graph_->RecordSince(start, bad);
    call->Reply(bad);
    return;
  }
  run->call = std::move(call);
  if (rungraph_local_ != nullptr) rungraph_local_->Increment();
  {
    absl::MutexLock lock(&local_in_flight_->mu);
    ++local_in_flight_->count;
  }
  CancellationManager* cancellation = run->call->cancellation();
  RunGraphWhereItFits(
      run->request, &run->response, cancellation,
      [this, run, start, in_flight = local_in_flight_](absl::Status status) {
        UpdateResourceBytes();
        run_graph_->RecordSince(start, status);
        run->call->Reply(status, status.ok() ? run->response.SerializeAsString() : std::string());
        // Last: the destructor may end once the count drops.
        absl::MutexLock lock(&in_flight->mu);
        --in_flight->count;
      });
}

void GrpcWorkerService::Replied(RunGraphCall* call, const absl::Status& status) {
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

void GrpcWorkerService::Serve(RecvTensorCall* call) {
  if (absl::Status denied = Authorize(call->context, Permission::kMember, "RecvTensor");
      !denied.ok()) {
    EndRecvTensor(call, denied, 0);
    return;
  }
  // Wait no longer than the caller does.
  RecvTensorRequest& request = call->request;
  const absl::Time deadline = absl::FromChrono(call->context.deadline());
  if (deadline < absl::Now() + absl::Hours(24 * 365)) {  // Else: no deadline.
    const int64_t left_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (request.timeout_in_ms() <= 0 || request.timeout_in_ms() > left_ms) {
      request.set_timeout_in_ms(left_ms);
    }
  }
  Tensor tensor;
  const absl::StatusOr<bool> produced = worker_->TryRecvTensor(request, &tensor);
  if (!produced.ok() || *produced) {
    // Answered now: streamed from here, unless it goes over the local socket.
    const bool local = produced.ok() && GoesLocal(*call, tensor);
    prometheus::Counter* where = local ? recv_tensor_on_pool_ : recv_tensor_on_loop_;
    if (where != nullptr) where->Increment();
    if (produced.ok()) {
      SendProduced(call, std::move(tensor), /*on_pool=*/false);
    } else {
      EndRecvTensor(call, produced.status(), 0);
    }
  } else if (WaitWithoutThread(call)) {
    if (recv_tensor_by_producer_ != nullptr) recv_tensor_by_producer_->Increment();
  } else {
    if (recv_tensor_on_pool_ != nullptr) recv_tensor_on_pool_->Increment();
    run_graph_threads_.Schedule([this, call] { WaitAndSend(call); });
  }
}

void GrpcWorkerService::SendProduced(RecvTensorCall* call, Tensor tensor, bool on_pool) {
  if (!GoesLocal(*call, tensor)) {
    StreamTensor(call, tensor);
  } else if (on_pool) {
    SendLocal(call, tensor);
  } else {  // It blocks: not on this thread.
    run_graph_threads_.Schedule(
        [this, call, tensor = std::move(tensor)] { SendLocal(call, tensor); });
  }
}

void GrpcWorkerService::AddWaiting(int delta) {
  recv_tensors_waiting_.fetch_add(delta);
  if (recv_tensor_waiting_ == nullptr) return;
  if (delta > 0) {
    recv_tensor_waiting_->Increment(delta);
  } else {
    recv_tensor_waiting_->Decrement(-delta);
  }
}

bool GrpcWorkerService::WaitWithoutThread(RecvTensorCall* call) {
  // The caller's timeout (at most its deadline) ends the wait.
  const int64_t timeout_ms = call->request.timeout_in_ms();
  if (timeout_ms > 0) {
    call->pending.fetch_add(1);  // The alarm's completion, fired or cancelled.
    call->alarm_set = true;
    call->alarm.Set(loop_->cq(), absl::ToChronoTime(absl::Now() + absl::Milliseconds(timeout_ms)),
                    CompletionQueueLoop::NewTag([this, call](bool fired) {
                      if (fired) {
                        // The key parsed when the call came (TryRecvTensor).
                        absl::StatusOr<RendezvousKey> key =
                            RendezvousKey::Parse(call->request.rendezvous_key());
                        call->cancellation.StartCancel(
                            key.ok()
                                ? RendezvousTimedOut(*key)
                                : absl::DeadlineExceededError("timed out waiting for the tensor"));
                      }
                      call->Unref(loop_);
                    }));
  }
  AddWaiting(1);
  const bool waits = worker_->RecvTensorWhenProduced(
      call->request, &call->cancellation, [this, call](absl::StatusOr<Tensor> value) {
        // On the producer's thread (its _Send), or the one that ended the wait.
        AddWaiting(-1);
        if (call->alarm_set) call->alarm.Cancel();
        if (value.ok()) {
          SendProduced(call, *std::move(value), /*on_pool=*/false);
        } else {
          EndRecvTensor(call, value.status(), 0);
        }
      });
  if (!waits) {
    AddWaiting(-1);
    if (call->alarm_set) call->alarm.Cancel();
  }
  return waits;
}

void GrpcWorkerService::WaitAndSend(RecvTensorCall* call) {
  Tensor tensor;
  AddWaiting(1);
  const absl::Status status = worker_->RecvTensor(call->request, &call->cancellation, &tensor);
  AddWaiting(-1);
  if (status.ok()) {
    SendProduced(call, std::move(tensor), /*on_pool=*/true);
  } else {
    EndRecvTensor(call, status, 0);
  }
}

bool GrpcWorkerService::GoesLocal(const RecvTensorCall& call, const Tensor& tensor) const {
  return local_ != nullptr && call.request.accept_local() &&
         static_cast<int64_t>(RawTensorBytes(tensor).size()) >= kLocalTransferMinBytes;
}

void GrpcWorkerService::SendLocal(RecvTensorCall* call, const Tensor& tensor) {
  absl::StatusOr<std::string> token = local_->NewToken();
  if (!token.ok()) {  // The stream carries the bytes.
    StreamTensor(call, tensor);
    return;
  }
  LocalTransferFields local;
  local.socket = local_->address();
  local.token = *token;
  absl::Status status = WriteTensorChunks(
      tensor, chunk_bytes_,
      [call](grpc::ByteBuffer message, int64_t, bool) {
        call->messages.push_back(std::move(message));
        return true;
      },
      local);
  if (!status.ok()) {
    local_->Drop(*token);
    EndRecvTensor(call, status, 0);
    return;
  }
  // The first message names the token (it is the only one); the caller then connects
  // with it. A caller that goes away, or a write that fails, ends the wait.
  absl::Notification written;
  call->responder.Write(call->messages.front(),
                        CompletionQueueLoop::NewTag([this, &written, token = *token](bool ok) {
                          if (!ok) local_->Forget(token);
                          written.Notify();
                        }));
  const CancellationManager::Token forget =
      call->cancellation.RegisterCallback([this, token = *token] { local_->Forget(token); });
  if (forget == CancellationManager::kInvalidToken) local_->Forget(*token);
  absl::StatusOr<UniqueFd> connection = local_->Await(
      *token,
      std::min(absl::FromChrono(call->context.deadline()), absl::Now() + kLocalTransferTimeout));
  status = connection.ok() ? SendLocalTransfer(connection->get(), RawTensorBytes(tensor))
                           : connection.status();
  if (forget != CancellationManager::kInvalidToken) call->cancellation.DeregisterCallback(forget);
  written.WaitForNotification();  // No write may be pending when the status goes.
  int64_t sent = 0;
  if (status.ok()) {
    sent = static_cast<int64_t>(RawTensorBytes(tensor).size());
    if (recv_tensor_local_ != nullptr) recv_tensor_local_->Increment();
  }
  EndRecvTensor(call, status, sent);
}

void GrpcWorkerService::StreamTensor(RecvTensorCall* call, const Tensor& tensor) {
  LocalTransferFields local;
  if (local_ != nullptr) local.socket = local_->address();
  const absl::Status status = WriteTensorChunks(
      tensor, chunk_bytes_,
      [call](grpc::ByteBuffer message, int64_t content_bytes, bool last) {
        call->messages.push_back(std::move(message));
        call->content_bytes += content_bytes;
        call->last_with_status = last;
        return true;
      },
      local);
  if (!status.ok()) {
    EndRecvTensor(call, status, 0);
    return;
  }
  WriteNext(call);
}

void GrpcWorkerService::WriteNext(RecvTensorCall* call) {
  const size_t i = call->next++;
  if (i == call->messages.size()) {  // Every message was written.
    EndRecvTensor(call, absl::OkStatus(), call->content_bytes);
    return;
  }
  if (i + 1 == call->messages.size() && call->last_with_status) {
    recv_tensor_method_->RecordSince(call->start, absl::OkStatus());
    if (recv_tensor_bytes_ != nullptr) {
      recv_tensor_bytes_->Increment(static_cast<double>(call->content_bytes));
    }
    call->responder.WriteAndFinish(
        call->messages[i], grpc::WriteOptions(), grpc::Status::OK,
        CompletionQueueLoop::NewTag([this, call](bool) { call->Unref(loop_); }));
    return;
  }
  call->responder.Write(call->messages[i], CompletionQueueLoop::NewTag([this, call](bool ok) {
                          if (ok) {
                            WriteNext(call);
                          } else {
                            EndRecvTensor(call, ReceiverClosed(), 0);
                          }
                        }));
}

void GrpcWorkerService::EndRecvTensor(RecvTensorCall* call, const absl::Status& status,
                                      int64_t sent) {
  recv_tensor_method_->RecordSince(call->start, status);
  if (recv_tensor_bytes_ != nullptr && sent > 0) {
    recv_tensor_bytes_->Increment(static_cast<double>(sent));
  }
  call->responder.Finish(ToGrpcStatus(status),
                         CompletionQueueLoop::NewTag([this, call](bool) { call->Unref(loop_); }));
}

}  // namespace overseer
