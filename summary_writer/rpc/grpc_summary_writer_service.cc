#include "summary_writer/rpc/grpc_summary_writer_service.h"

#include "absl/strings/str_cat.h"
#include "core/rpc/grpc_status.h"

namespace overseer {

grpc::Status GrpcSummaryWriterService::OpenWriter(grpc::ServerContext*,
                                                  const OpenWriterRequest* request,
                                                  OpenWriterResponse* response) {
  return ToGrpcStatus(impl_->OpenWriter(*request, response));
}

grpc::Status GrpcSummaryWriterService::WriteEvents(
    grpc::ServerContext*, grpc::ServerReader<WriteEventsRequest>* reader,
    WriteEventsResponse* response) {
  WriteEventsRequest request;
  int64_t writer_id = 0;
  bool first = true;
  while (reader->Read(&request)) {
    if (first) {
      writer_id = request.writer_id();
      first = false;
    } else if (request.writer_id() != writer_id) {
      return ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrCat("a WriteEvents stream names writers ", writer_id, " and ",
                       request.writer_id(), "; use one stream per writer")));
    }
    const absl::Status s = impl_->WriteEvents(request);
    if (!s.ok()) return ToGrpcStatus(s);
    response->set_events_written(response->events_written() + request.events_size());
    if (request.flush()) {
      FlushWriterRequest flush;
      flush.set_writer_id(writer_id);
      FlushWriterResponse flushed;
      const absl::Status f = impl_->FlushWriter(flush, &flushed);
      if (!f.ok()) return ToGrpcStatus(f);
    }
  }
  return grpc::Status::OK;
}

grpc::Status GrpcSummaryWriterService::FlushWriter(grpc::ServerContext*,
                                                   const FlushWriterRequest* request,
                                                   FlushWriterResponse* response) {
  return ToGrpcStatus(impl_->FlushWriter(*request, response));
}

grpc::Status GrpcSummaryWriterService::CloseWriter(grpc::ServerContext*,
                                                   const CloseWriterRequest* request,
                                                   CloseWriterResponse* response) {
  return ToGrpcStatus(impl_->CloseWriter(*request, response));
}

}  // namespace overseer
