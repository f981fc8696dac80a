#include "summary_writer/rpc/grpc_summary_writer_service.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/rooted_file_system.h"
#include "core/rpc/grpc_status.h"
#include "core/rpc/security.h"
#include "google/protobuf/arena.h"

namespace overseer {
namespace {

// The arena's first block: room for a full batch of scalar events (512 of them take
// about 100 KiB as messages); larger messages take more blocks, freed at the reset.
constexpr size_t kArenaBlockBytes = 256 << 10;

// The service's methods; a WriteEvents stream lasts as long as its client streams.
std::shared_ptr<RpcMetrics> EventWriterRpcMetrics() {
  const std::vector<double> step = RpcMetrics::StepBuckets();
  return std::make_shared<RpcMetrics>(
      "event_writer", std::vector<RpcMethodOptions>{{"OpenWriter", step},
                                                    {"WriteEvents", RpcMetrics::SlowBuckets()},
                                                    {"FlushWriter", step},
                                                    {"CloseWriter", step}});
}

}  // namespace

GrpcSummaryWriterService::GrpcSummaryWriterService(SummaryWriterServiceImpl* impl,
                                                   std::string logdir)
    : impl_(impl),
      logdir_(std::move(logdir)),
      rpc_metrics_(EventWriterRpcMetrics()),
      open_writer_(rpc_metrics_->method("OpenWriter")),
      write_events_(rpc_metrics_->method("WriteEvents")),
      flush_writer_(rpc_metrics_->method("FlushWriter")),
      close_writer_(rpc_metrics_->method("CloseWriter")) {}

grpc::Status GrpcSummaryWriterService::Done(RpcMetrics::Method* method, absl::Time start,
                                            const absl::Status& status) {
  method->RecordSince(start, status);
  return ToGrpcStatus(WithPathsRelativeTo(logdir_, status));
}

grpc::Status GrpcSummaryWriterService::OpenWriter(grpc::ServerContext* context,
                                                  const OpenWriterRequest* request,
                                                  OpenWriterResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "OpenWriter"); !denied.ok()) {
    return Done(open_writer_, start, denied);
  }
  return Done(open_writer_, start, impl_->OpenWriter(*request, response));
}

grpc::Status GrpcSummaryWriterService::WriteEvents(grpc::ServerContext* context,
                                                   grpc::ServerReader<WriteEventsRequest>* reader,
                                                   WriteEventsResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "WriteEvents"); !denied.ok()) {
    return Done(write_events_, start, denied);
  }
  // Each message is parsed into an arena that starts in a block allocated once per
  // stream and is reset between messages: the events of a message (an Event, its
  // Summary, values and tags each) cost no malloc/free pair apiece.
  std::unique_ptr<char[]> block(new char[kArenaBlockBytes]);
  google::protobuf::ArenaOptions arena_options;
  arena_options.initial_block = block.get();
  arena_options.initial_block_size = kArenaBlockBytes;
  google::protobuf::Arena arena(arena_options);
  int64_t writer_id = 0;
  bool first = true;
  for (;;) {
    arena.Reset();
    auto* request = google::protobuf::Arena::CreateMessage<WriteEventsRequest>(&arena);
    if (!reader->Read(request)) break;
    if (first) {
      writer_id = request->writer_id();
      first = false;
    } else if (request->writer_id() != writer_id) {
      return Done(write_events_, start,
                  absl::InvalidArgumentError(absl::StrCat("a WriteEvents stream names writers ",
                                                          writer_id, " and ", request->writer_id(),
                                                          "; use one stream per writer")));
    }
    const absl::StatusOr<int64_t> written = impl_->WriteEvents(*request);
    if (!written.ok()) return Done(write_events_, start, written.status());
    response->set_events_written(response->events_written() + *written);
    if (request->flush()) {
      FlushWriterRequest flush;
      flush.set_writer_id(writer_id);
      FlushWriterResponse flushed;
      const absl::Status f = impl_->FlushWriter(flush, &flushed);
      if (!f.ok()) return Done(write_events_, start, f);
    }
  }
  return Done(write_events_, start, absl::OkStatus());
}

grpc::Status GrpcSummaryWriterService::FlushWriter(grpc::ServerContext* context,
                                                   const FlushWriterRequest* request,
                                                   FlushWriterResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "FlushWriter"); !denied.ok()) {
    return Done(flush_writer_, start, denied);
  }
  return Done(flush_writer_, start, impl_->FlushWriter(*request, response));
}

grpc::Status GrpcSummaryWriterService::CloseWriter(grpc::ServerContext* context,
                                                   const CloseWriterRequest* request,
                                                   CloseWriterResponse* response) {
  const absl::Time start = absl::Now();
  if (absl::Status denied = Authorize(*context, Permission::kMember, "CloseWriter"); !denied.ok()) {
    return Done(close_writer_, start, denied);
  }
  return Done(close_writer_, start, impl_->CloseWriter(*request, response));
}

}  // namespace overseer
