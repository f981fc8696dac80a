#ifndef OVERSEER_WORKER_RPC_GRPC_WORKER_SERVICE_H_
#define OVERSEER_WORKER_RPC_GRPC_WORKER_SERVICE_H_

#include <cstdint>

#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/worker.grpc.pb.h"
#include "worker/worker.h"

namespace overseer {

// Puts a Worker on gRPC: unpacks each call, runs the logic, converts the status
// (core/rpc/grpc_status.h), and counts calls in the metrics registry:
//   overseer_worker_rungraph_total, overseer_worker_recv_tensor_total,
//   overseer_worker_recv_tensor_bytes_total (element bytes streamed),
//   overseer_worker_rpc_errors_total{code}, overseer_worker_resource_bytes.
// RecvTensor streams the tensor in chunks (worker/rpc/tensor_chunks.h) and waits no
// longer than the caller's deadline. Thread-safe.
class GrpcWorkerService final : public WorkerService::Service {
 public:
  // `worker` and `metrics` (may be null: no metrics) are not owned and must outlive
  // this object.
  GrpcWorkerService(Worker* worker, prometheus::Registry* metrics,
                    int64_t chunk_bytes = 4 << 20);

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
  grpc::Status DeregisterGraph(grpc::ServerContext* context,
                               const DeregisterGraphRequest* request,
                               DeregisterGraphResponse* response) override;
  grpc::Status RunGraph(grpc::ServerContext* context, const RunGraphRequest* request,
                        RunGraphResponse* response) override;
  grpc::Status CleanupGraph(grpc::ServerContext* context, const CleanupGraphRequest* request,
                            CleanupGraphResponse* response) override;
  grpc::Status CleanupAll(grpc::ServerContext* context, const CleanupAllRequest* request,
                          CleanupAllResponse* response) override;
  // RecvTensor: one request, then the tensor's raw RecvTensorResponse messages.
  grpc::Status StreamTensor(grpc::ServerContext* context,
                            grpc::ServerSplitStreamer<RecvTensorRequest, grpc::ByteBuffer>* stream);
  grpc::Status JobDone(grpc::ServerContext* context, const JobDoneRequest* request,
                       JobDoneResponse* response) override;

 private:
  // Converts `status`, counting it if it is an error.
  grpc::Status Done(const absl::Status& status);
  void UpdateResourceBytes();

  Worker* const worker_;
  const int64_t chunk_bytes_;
  prometheus::Counter* rungraph_ = nullptr;
  prometheus::Counter* recv_tensor_ = nullptr;
  prometheus::Counter* recv_tensor_bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* errors_ = nullptr;
  prometheus::Gauge* resource_bytes_ = nullptr;
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_RPC_GRPC_WORKER_SERVICE_H_
