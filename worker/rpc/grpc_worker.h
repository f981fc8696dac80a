#ifndef OVERSEER_WORKER_RPC_GRPC_WORKER_H_
#define OVERSEER_WORKER_RPC_GRPC_WORKER_H_

// WorkerInterface over gRPC, and the WorkerCache that dials a cluster's tasks.

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/rpc/completion_queue_loop.h"
#include "core/rpc/keepalive.h"
#include "grpcpp/channel.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/sync_stream.h"
#include "proto/cluster.pb.h"
#include "proto/worker.grpc.pb.h"
#include "worker/rpc/local_calls.h"
#include "worker/worker_cache.h"
#include "worker/worker_interface.h"

namespace overseer {

struct GrpcWorkerOptions {
  // Deadline of the control calls (GetStatus, sessions, Register/Deregister,
  // CleanupGraph, CleanupAll, JobDone).
  absl::Duration rpc_timeout = absl::Seconds(30);
  // RunGraph and RecvTensor wait up to their request's timeout_in_ms plus this
  // grace...
  absl::Duration timeout_grace = absl::Seconds(10);
  // ...or, without one, this long.
  absl::Duration max_step_time = absl::Hours(24);
  // Not owned. While it runs, RunGraphAsync and RecvTensorAsync calls start on its
  // queue, so that the reply is read, and the caller's `done` run, by the loop's thread
  // (the master's step loop: a step continues where its RunGraph replies arrive; a
  // worker's: a _Recv ends where its tensor arrives). Null, or not running: a blocking
  // call on a process-wide pool thread, which runs `done`.
  CompletionQueueLoop* loop = nullptr;
  // Keepalive of the channels GrpcWorkerCache opens (core/rpc/keepalive.h): a task
  // that stops answering fails the calls open to it UNAVAILABLE after about twice this.
  absl::Duration keepalive = kDefaultKeepalive;
  // Fetch large tensors from a worker on the same host over its local transfer socket
  // (worker/rpc/local_transfer.h) once a probe reached it; false: always the stream.
  bool local_transfers = true;
  // Send RunGraph to a worker on the same host over its local call socket
  // (worker/rpc/local_calls.h) once a gRPC reply named it and a connection to it opened;
  // false: always gRPC.
  bool local_calls = true;
};

// A channel to a worker with no message size limits (RecvTensor streams in chunks; a
// RunGraph with large feeds is bounded only by protobuf's 2 GB) and gRPC's own retries
// off (a call that fails is the caller's to retry), pinging the task while calls are
// open (core/rpc/keepalive.h).
std::shared_ptr<grpc::Channel> NewWorkerChannel(const std::string& address,
                                                absl::Duration keepalive = kDefaultKeepalive);

// The starting HTTP/2 stream window of worker servers and of channels to them (gRPC's
// is 64 KiB), so that a RecvTensor stream runs at memory speed from its first byte.
// BDP probing stays on: with it off (the window fixed at this size) a stream reached
// only 0.57-0.74 of a raw gRPC stream's rate on the quiet 2-core host, against
// 0.86-1.35 with it on; under load (three busy loops on the 2 cores) both ran at
// 0.67-0.92.
constexpr int kWorkerStreamWindowBytes = 64 << 20;

// How many threads of a worker server may wait for calls between bursts of blocking
// calls (ServerRunnerOptions::max_pollers; worker_main.cc says why).
constexpr int kWorkerServerMaxPollers = 16;

// How long GetStatus waits for a task that cannot be reached (it may be restarting)
// before it is UNAVAILABLE.
constexpr absl::Duration kGetStatusWait = absl::Seconds(2);

// Thread-safe. Every call carries a deadline; a dead or unreachable peer fails
// UNAVAILABLE (gRPC fails fast when the connection cannot be made or breaks).
//
// RunGraph goes over gRPC until a reply names the worker's local call socket and a
// connection to it opens (the worker is on this host: GrpcWorkerOptions::local_calls;
// a process's GrpcWorkers to one worker share one connection); then over it, with the
// same deadline, cancellation and keepalive, its `done` run by the connection's thread.
// A connection that closed (the worker went away, or stopped answering its keepalive)
// sends the next call over gRPC again, whose reply names the socket of whatever serves
// the task now.
class GrpcWorker : public WorkerInterface {
 public:
  GrpcWorker(std::shared_ptr<grpc::Channel> channel, GrpcWorkerOptions options = {});

  absl::Status GetStatus(const GetStatusRequest& request, GetStatusResponse* response) override;
  absl::Status CreateWorkerSession(const CreateWorkerSessionRequest& request,
                                   CreateWorkerSessionResponse* response) override;
  absl::Status DeleteWorkerSession(const DeleteWorkerSessionRequest& request,
                                   DeleteWorkerSessionResponse* response) override;
  absl::Status RegisterGraph(const RegisterGraphRequest& request,
                             RegisterGraphResponse* response) override;
  absl::Status DeregisterGraph(const DeregisterGraphRequest& request,
                               DeregisterGraphResponse* response) override;
  absl::Status RunGraph(const RunGraphRequest& request, RunGraphResponse* response) override;
  void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                     CancellationManager* cancellation,
                     std::function<void(absl::Status)> done) override;
  absl::Status CleanupGraph(const CleanupGraphRequest& request,
                            CleanupGraphResponse* response) override;
  absl::Status CleanupAll(const CleanupAllRequest& request, CleanupAllResponse* response) override;
  // Reassembles the chunked stream, or reads the bytes from the worker's local
  // transfer socket when it sends a token; `cancellation` cancels the call (CANCELLED).
  absl::Status RecvTensor(const RecvTensorRequest& request, CancellationManager* cancellation,
                          Tensor* tensor) override;
  // The same read by options.loop's thread while it runs (a blocking call on a pool
  // thread otherwise); `done` runs there. Only a local transfer's read of its socket,
  // and the first probe of a socket a reply names, run on a pool thread.
  void RecvTensorAsync(const RecvTensorRequest& request, CancellationManager* cancellation,
                       std::function<void(absl::StatusOr<Tensor>)> done) override;
  absl::Status JobDone(const JobDoneRequest& request, JobDoneResponse* response) override;

 private:
  absl::Duration StepTimeout(int64_t timeout_in_ms) const;
  // The worker's local transfer socket if a probe reached it (else empty).
  std::string ReachableLocalSocket() ABSL_LOCKS_EXCLUDED(local_mu_);
  // Whether `address` is the one probed last (a reply naming it needs no probe).
  bool KnowsLocalSocket(const std::string& address) ABSL_LOCKS_EXCLUDED(local_mu_);
  // Probes `address`, named by the worker's last reply, unless it was probed before.
  // The probe connects to it, so it may block.
  void LearnLocalSocket(const std::string& address) ABSL_LOCKS_EXCLUDED(local_mu_);
  // A transfer over `address` could not connect: probe again on the next reply.
  void ForgetLocalSocket(const std::string& address) ABSL_LOCKS_EXCLUDED(local_mu_);
  // Where RunGraph goes on this host (grpc_worker.cc): shared with the gRPC calls in
  // flight, whose replies name the worker's local call socket and may come after this
  // object is gone.
  struct LocalCallRoute;
  // RunGraph over gRPC, blocking; then connects to the local call socket its reply
  // named, if that is new.
  grpc::Status BlockingRunGraph(grpc::ClientContext* context, const RunGraphRequest& request,
                                RunGraphResponse* response);
  // RunGraphAsync over `channel`.
  void RunGraphLocal(LocalCallChannel& channel, const RunGraphRequest& request,
                     RunGraphResponse* response, CancellationManager* cancellation,
                     std::function<void(absl::Status)> done);

  const GrpcWorkerOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<WorkerService::Stub> stub_;
  // RecvTensor read as raw messages (TensorChunkReader::AddEncoded).
  const grpc::internal::RpcMethod recv_tensor_method_;
  absl::Mutex local_mu_;
  std::string local_probed_ ABSL_GUARDED_BY(local_mu_);      // The last address probed...
  bool local_reachable_ ABSL_GUARDED_BY(local_mu_) = false;  // ...and whether it connected.
  const std::shared_ptr<LocalCallRoute> route_;
};

// Dials the tasks of a ClusterDef ("/job:J/replica:0/task:I" -> its address), one
// channel per task, created on first use. Thread-safe.
class GrpcWorkerCache : public WorkerCacheInterface {
 public:
  explicit GrpcWorkerCache(const ClusterDef& cluster, GrpcWorkerOptions options = {});

  absl::StatusOr<std::shared_ptr<WorkerInterface>> GetWorker(const std::string& task) override;

 private:
  const GrpcWorkerOptions options_;
  std::map<std::string, std::string> addresses_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<WorkerInterface>> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_RPC_GRPC_WORKER_H_
