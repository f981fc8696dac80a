#ifndef OVERSEER_SUMMARY_WRITER_RPC_GRPC_SUMMARY_WRITER_SERVICE_H_
#define OVERSEER_SUMMARY_WRITER_RPC_GRPC_SUMMARY_WRITER_SERVICE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "core/metrics/rpc_metrics.h"
#include "proto/summary_writer_service.grpc.pb.h"
#include "summary_writer/summary_writer_service.h"

namespace overseer {

// Puts SummaryWriterServiceImpl on gRPC: unpacks each call, runs the logic, converts
// the status, and records every method's latency and errors in rpc_metrics():
//   overseer_event_writer_rpc_latency_seconds{method} (a WriteEvents stream: from its
//   first message to its end), overseer_event_writer_rpc_errors_total{method,code}.
// Thread-safe.
class GrpcSummaryWriterService final : public SummaryWriterService::Service {
 public:
  // `impl` is not owned and must outlive this object.
  // Errors name paths relative to `logdir`, when given.
  explicit GrpcSummaryWriterService(SummaryWriterServiceImpl* impl, std::string logdir = "");

  // Serve it with the registry (ServerRunner::AddCollectable).
  std::shared_ptr<RpcMetrics> rpc_metrics() const { return rpc_metrics_; }

  grpc::Status OpenWriter(grpc::ServerContext* context, const OpenWriterRequest* request,
                          OpenWriterResponse* response) override;
  grpc::Status WriteEvents(grpc::ServerContext* context,
                           grpc::ServerReader<WriteEventsRequest>* reader,
                           WriteEventsResponse* response) override;
  grpc::Status FlushWriter(grpc::ServerContext* context, const FlushWriterRequest* request,
                           FlushWriterResponse* response) override;
  grpc::Status CloseWriter(grpc::ServerContext* context, const CloseWriterRequest* request,
                           CloseWriterResponse* response) override;

 private:
  // Records a call of `method` that arrived at `start`, and converts its status.
  grpc::Status Done(RpcMetrics::Method* method, absl::Time start, const absl::Status& status);

  SummaryWriterServiceImpl* const impl_;
  const std::string logdir_;
  const std::shared_ptr<RpcMetrics> rpc_metrics_;
  RpcMetrics::Method* const open_writer_;
  RpcMetrics::Method* const write_events_;
  RpcMetrics::Method* const flush_writer_;
  RpcMetrics::Method* const close_writer_;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_RPC_GRPC_SUMMARY_WRITER_SERVICE_H_
