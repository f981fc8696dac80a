#ifndef OVERSEER_WORKER_RPC_GRPC_WORKER_SERVICE_H_
#define OVERSEER_WORKER_RPC_GRPC_WORKER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/executor/thread_pool.h"
#include "core/metrics/rpc_metrics.h"
#include "core/rpc/async_unary_call.h"
#include "core/rpc/completion_queue_loop.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/worker.grpc.pb.h"
#include "worker/rpc/local_calls.h"
#include "worker/rpc/local_transfer.h"
#include "worker/worker.h"

namespace overseer {

// Puts a Worker on gRPC: unpacks each call, runs the logic, converts the status
// (core/rpc/grpc_status.h), and counts calls in the metrics registry:
//   overseer_worker_rungraph_total{thread}, overseer_worker_recv_tensor_total{thread},
//   overseer_worker_recv_tensor_waiting, overseer_worker_recv_tensor_bytes_total
//   (element bytes streamed), overseer_worker_resource_bytes;
// and every method's latency and errors in rpc_metrics() (core/metrics/rpc_metrics.h):
//   overseer_worker_rpc_latency_seconds{method}, overseer_worker_rpc_errors_total{method,code}.
// RecvTensor's latency includes the wait for its tensor's producer.
//
// RunGraph is an asynchronous method served on a CompletionQueueLoop
// (core/rpc/completion_queue_loop.h). A quick graph that never waits for other work
// (Worker::RunGraphIsQuick: one step's fetch, a variable read) runs on the loop's
// thread, which read the call and sends the reply: no other thread is woken, where
// gRPC's synchronous server hands every call from the thread that read it to another
// (thread="loop" in the metric). Any other graph (one that receives from another task,
// waits on a queue, or took longer than WorkerOptions::quick_run_graph) runs on a thread of
// its own, from a pool that grows rather than make a graph wait (thread="pool"). A call
// the master gives up on ends its step as CleanupGraph would.
//
// With ServeLocalCalls, RunGraph is also served over a Unix socket
// (worker/rpc/local_calls.h), named in every gRPC RunGraph reply: a caller on this host
// sends its later calls there, with no gRPC on either side. Such a call runs where the
// same call over gRPC would (the socket's connection thread stands for the loop's:
// thread="loop"), and is counted in overseer_worker_rungraph_local_total too.
//
// RecvTensor streams the tensor in chunks (worker/rpc/tensor_chunks.h) and waits no
// longer than the caller's deadline. It is served on the loop too: a tensor already
// produced is streamed from the loop's thread, each message written as the previous
// write completes (thread="loop" in overseer_worker_recv_tensor_total); a call that
// waits for its producer holds no thread: the producer's _Send starts the reply
// (thread="producer"), unless the call came before its step's RunGraph, when it waits
// on a thread of the pool (thread="pool"). A caller on the same host that accepts it
// gets a tensor of at least kLocalTransferMinBytes over the local transfer socket
// instead, sent from a thread of the pool (worker/rpc/local_transfer.h;
// overseer_worker_recv_tensor_local_total counts them).
// Thread-safe.
class GrpcWorkerService final
    : public WorkerService::WithAsyncMethod_RunGraph<WorkerService::Service> {
 public:
  // `worker`, `metrics` (may be null: no metrics) and `loop` are not owned and must
  // outlive this object. `loop` serves RunGraph: add it to the same server
  // (ServerRunner::AddCompletionQueueLoop) before it starts.
  // `local` (may be null: no same-host transfers; not owned, must outlive this object)
  // is the worker's local transfer socket, named in every RecvTensor reply.
  GrpcWorkerService(Worker* worker, prometheus::Registry* metrics, CompletionQueueLoop* loop,
                    int64_t chunk_bytes = 4 << 20, LocalTransferServer* local = nullptr);
  // Stops serving local calls (the steps of those in flight are cancelled) and waits
  // for them to end.
  ~GrpcWorkerService() override;

  // Serves RunGraph also over a Unix socket at `address` (core/io/unix_socket.h: "@name"
  // or a path; LocalCallServer::DefaultAddress()), named in every gRPC RunGraph reply.
  // Call at most once, before the server starts. FAILED_PRECONDITION with security on
  // (the socket cannot authenticate its callers: docs/security.md); else the errors of
  // LocalCallServer::Start.
  absl::Status ServeLocalCalls(const std::string& address);
  // The socket ServeLocalCalls serves ("" if none), and its connections open now.
  std::string local_calls_address() const;
  int local_call_connections() const;

  // Every method's latency and errors; serve it with the registry
  // (ServerRunner::AddCollectable).
  std::shared_ptr<RpcMetrics> rpc_metrics() const { return rpc_metrics_; }
  // RecvTensor calls waiting for their tensor right now (as the metric
  // overseer_worker_recv_tensor_waiting, which only a service with metrics has).
  int recv_tensors_waiting() const { return recv_tensors_waiting_.load(); }

  grpc::Status GetStatus(grpc::ServerContext* context, const GetStatusRequest* request,
                         GetStatusResponse* response) override;
  grpc::Status CreateWorkerSession(grpc::ServerContext* context,
                                   const CreateWorkerSessionRequest* request,
                                   CreateWorkerSessionResponse* response) override;
  grpc::Status DeleteWorkerSession(grpc::ServerContext* context,
                                   const DeleteWorkerSessionRequest* request,
                                   DeleteWorkerSessionResponse* response) override;
  grpc::Status RegisterGraph(grpc::ServerContext* context, const RegisterGraphRequest* request,
                             RegisterGraphResponse* response) override;
  grpc::Status DeregisterGraph(grpc::ServerContext* context, const DeregisterGraphRequest* request,
                               DeregisterGraphResponse* response) override;
  grpc::Status CleanupGraph(grpc::ServerContext* context, const CleanupGraphRequest* request,
                            CleanupGraphResponse* response) override;
  grpc::Status CleanupAll(grpc::ServerContext* context, const CleanupAllRequest* request,
                          CleanupAllResponse* response) override;
  grpc::Status JobDone(grpc::ServerContext* context, const JobDoneRequest* request,
                       JobDoneResponse* response) override;

 private:
  using RunGraphCall = AsyncUnaryCall<RunGraphRequest, RunGraphResponse>;
  // Runs an arrived call's graph and replies.
  void Serve(RunGraphCall* call);
  // Runs `request`'s graph, filling `response`, and calls `reply` with its status: on
  // this thread (the one that read the call) if it is quick; started here
  // (Worker::RunFoundGraphAsync) if its only waits hold no thread; else on
  // run_graph_threads_. `cancellation` is the call's: the caller gave up. `request` and
  // `response` live until `reply` runs.
  void RunGraphWhereItFits(const RunGraphRequest& request, RunGraphResponse* response,
                           CancellationManager* cancellation,
                           std::function<void(absl::Status)> reply);
  // Serves a call that came over the local call socket, on its connection's thread.
  void ServeLocal(std::shared_ptr<LocalCall> call);
  // Records a RunGraph call's end and replies `status` (and its response). Any thread.
  void Replied(RunGraphCall* call, const absl::Status& status);
  // A RecvTensor call: one request, then the tensor's raw RecvTensorResponse messages.
  struct RecvTensorCall : AsyncServerCall {
    RecvTensorRequest request;
    grpc::ServerAsyncWriter<grpc::ByteBuffer> responder{&context};
    // The stream's messages (which may reference the tensor's buffer), the next to
    // write, and whether the last goes out with the call's status.
    std::vector<grpc::ByteBuffer> messages;
    size_t next = 0;
    bool last_with_status = false;
    // Element bytes in the messages.
    int64_t content_bytes = 0;
    // Ends a wait without a thread at the caller's timeout.
    grpc::Alarm alarm;
    bool alarm_set = false;
  };
  // Serves an arrived RecvTensor on the loop's thread: a tensor already produced is
  // streamed from there; a call that must wait for its producer waits without a thread
  // (WaitWithoutThread) or, before its step ran here, on run_graph_threads_, as does a
  // tensor that goes over the local transfer socket.
  void Serve(RecvTensorCall* call);
  // Leaves the call with the step's rendezvous, whose producer (or the wait's end: the
  // caller's timeout, its going away, the step's cleanup) sends the answer; false if
  // only WaitAndSend may serve it (Worker::RecvTensorWhenProduced).
  bool WaitWithoutThread(RecvTensorCall* call);
  // On a pool thread: waits for the tensor, then sends it.
  void WaitAndSend(RecvTensorCall* call);
  // Counts calls that start (1) or stop (-1) waiting for their tensor.
  void AddWaiting(int delta);
  // Sends a produced `tensor`: streamed, or over the local transfer socket from a
  // thread of the pool (this one if `on_pool`).
  void SendProduced(RecvTensorCall* call, Tensor tensor, bool on_pool);
  // Whether `tensor` goes to the caller over the local transfer socket.
  bool GoesLocal(const RecvTensorCall& call, const Tensor& tensor) const;
  // Sends `tensor` over the local transfer socket (blocks: not on the loop's thread)
  // and ends the call.
  void SendLocal(RecvTensorCall* call, const Tensor& tensor);
  // Starts streaming `tensor`: each message is written when the previous write
  // completes, on the loop's thread; the last ends the call.
  void StreamTensor(RecvTensorCall* call, const Tensor& tensor);
  void WriteNext(RecvTensorCall* call);
  // Counts the call and sends its status (`sent` element bytes went out).
  void EndRecvTensor(RecvTensorCall* call, const absl::Status& status, int64_t sent);
  // Records a call of `method` that arrived at `start`, and converts its status.
  grpc::Status Done(RpcMetrics::Method* method, absl::Time start, const absl::Status& status);
  void UpdateResourceBytes();

  Worker* const worker_;
  CompletionQueueLoop* const loop_;
  const int64_t chunk_bytes_;
  LocalTransferServer* const local_;
  prometheus::Counter* rungraph_on_loop_ = nullptr;
  prometheus::Counter* rungraph_async_ = nullptr;
  prometheus::Counter* rungraph_on_pool_ = nullptr;
  prometheus::Counter* rungraph_local_ = nullptr;
  prometheus::Counter* recv_tensor_on_loop_ = nullptr;
  prometheus::Counter* recv_tensor_on_pool_ = nullptr;
  prometheus::Counter* recv_tensor_by_producer_ = nullptr;
  // RecvTensor calls waiting for their tensor right now.
  prometheus::Gauge* recv_tensor_waiting_ = nullptr;
  prometheus::Counter* recv_tensor_bytes_ = nullptr;
  prometheus::Counter* recv_tensor_local_ = nullptr;
  prometheus::Gauge* resource_bytes_ = nullptr;
  std::atomic<int> recv_tensors_waiting_{0};
  const std::shared_ptr<RpcMetrics> rpc_metrics_;
  // rpc_metrics_'s methods.
  RpcMetrics::Method* const get_status_;
  RpcMetrics::Method* const create_worker_session_;
  RpcMetrics::Method* const delete_worker_session_;
  RpcMetrics::Method* const register_graph_;
  RpcMetrics::Method* const deregister_graph_;
  RpcMetrics::Method* const run_graph_;
  RpcMetrics::Method* const cleanup_graph_;
  RpcMetrics::Method* const cleanup_all_;
  RpcMetrics::Method* const recv_tensor_method_;
  RpcMetrics::Method* const job_done_;
  // Local calls whose reply has not gone yet; shared with their replies, which may
  // outlive this object by a moment after the count drops.
  struct LocalCallsInFlight {
    absl::Mutex mu;
    int count ABSL_GUARDED_BY(mu) = 0;
    bool Idle() const ABSL_SHARED_LOCKS_REQUIRED(mu) { return count == 0; }
  };
  const std::shared_ptr<LocalCallsInFlight> local_in_flight_ =
      std::make_shared<LocalCallsInFlight>();
  // Set before the server starts (ServeLocalCalls), reset by the destructor.
  std::unique_ptr<LocalCallServer> local_calls_;
  // Last: its tasks use the members above, and it runs them before it is destroyed.
  ThreadPool run_graph_threads_;
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_RPC_GRPC_WORKER_SERVICE_H_
