#ifndef OVERSEER_SUMMARY_WRITER_RPC_GRPC_SUMMARY_WRITER_SERVICE_H_
#define OVERSEER_SUMMARY_WRITER_RPC_GRPC_SUMMARY_WRITER_SERVICE_H_

#include "proto/summary_writer_service.grpc.pb.h"
#include "summary_writer/summary_writer_service.h"

namespace overseer {

// Puts SummaryWriterServiceImpl on gRPC: unpacks each call, runs the logic, converts
// the status. Thread-safe.
class GrpcSummaryWriterService final : public SummaryWriterService::Service {
 public:
  // `impl` is not owned and must outlive this object.
  explicit GrpcSummaryWriterService(SummaryWriterServiceImpl* impl) : impl_(impl) {}

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
  SummaryWriterServiceImpl* const impl_;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_RPC_GRPC_SUMMARY_WRITER_SERVICE_H_
