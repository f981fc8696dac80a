// Benchmarks of event writing (./dev bench), for scalar summaries:
//   summary.events_per_sec_embedded: SummaryWriter into a local directory, 1000
//     AddSummary calls (of prebuilt Summary protos) then Flush (durable), in events
//     per second.
//   summary.events_per_sec_service: the same through a summary_writer service in this
//     process over a loopback gRPC channel.
//   Baseline of both: raw append + fsync of the same record bytes with the same write
//     pattern (one write per max_queue = 10 records, one fdatasync per 1000 events), so
//     the ratio is what framing, serialization and (for the service) gRPC cost.
// Files go under $TEST_TMPDIR or /tmp.

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "client/summary_writer.h"
#include "core/logging.h"
#include "core/rpc/server_runner.h"
#include "proto/event.pb.h"
#include "summary_writer/record.h"
#include "summary_writer/rpc/grpc_summary_writer_service.h"
#include "summary_writer/summary_writer_service.h"

namespace overseer {
namespace {

constexpr int kEventsPerCall = 1000;
constexpr int kMaxQueue = 10;

Summary LossSummary(int step) {
  Summary summary;
  Summary::Value* v = summary.add_value();
  v->set_tag("loss");
  v->set_simple_value(1.0f / (step + 1));
  return summary;
}

std::string BenchDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/overseer_summary_bench.",
                                 ::getpid());
  return dir;
}

// Writes kEventsPerCall scalars (built beforehand, as the baseline's bytes are) and
// flushes; returns events per second.
double WriterEventsPerSecond(SummaryWriter* writer) {
  std::vector<Summary> summaries;
  for (int i = 0; i < kEventsPerCall; ++i) summaries.push_back(LossSummary(i));
  int64_t step = 0;
  const double seconds = bench::SecondsPerCall([&] {
    for (int i = 0; i < kEventsPerCall; ++i, ++step) {
      CHECK(writer->AddSummary(summaries[i], step).ok());
    }
    CHECK(writer->Flush().ok());
  });
  return kEventsPerCall / seconds;
}

double RawEventsPerSecond(const std::string& path) {
  // The framed bytes of the events the writer produces, chunked as it writes them.
  std::vector<std::string> chunks;
  std::string chunk;
  for (int i = 0; i < kEventsPerCall; ++i) {
    Event event;
    event.set_wall_time(1700000000.123 + i);
    event.set_step(i);
    *event.mutable_summary() = LossSummary(i);
    AppendRecord(event.SerializeAsString(), &chunk);
    if ((i + 1) % kMaxQueue == 0) {
      chunks.push_back(std::move(chunk));
      chunk.clear();
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  CHECK(fd >= 0) << path;
  const double seconds = bench::SecondsPerCall([&] {
    for (const std::string& c : chunks) CHECK(::write(fd, c.data(), c.size()) == static_cast<ssize_t>(c.size()));
    CHECK(::fdatasync(fd) == 0);
  });
  ::close(fd);
  return kEventsPerCall / seconds;
}

int Main() {
  SetMinLogSeverity(LogSeverity::kWarning);
  const std::string dir = BenchDir();
  SummaryWriterOptions options;
  options.max_queue = kMaxQueue;
  options.background_flush = false;

  auto embedded = SummaryWriter::Create(dir + "/embedded", options);
  CHECK(embedded.ok()) << embedded.status();
  const double raw = RawEventsPerSecond(dir + "/embedded/raw.bin");
  const double local = WriterEventsPerSecond(embedded->get());
  CHECK((*embedded)->Close().ok());

  SummaryWriterServiceOptions service_options;
  service_options.logdir = dir + "/service";
  service_options.default_max_queue = kMaxQueue;
  SummaryWriterServiceImpl impl(service_options, EventWriterEnv(), nullptr);
  GrpcSummaryWriterService service(&impl);
  ServerRunnerOptions runner_options;
  runner_options.component = "summary_writer";
  runner_options.host = "127.0.0.1";
  runner_options.metrics_port = -1;
  runner_options.handle_signals = false;
  ServerRunner runner(runner_options);
  runner.AddService(&service);
  CHECK(runner.Start().ok());
  auto remote = SummaryWriter::Create(absl::StrCat("grpc://", runner.address(), "/bench"), options);
  CHECK(remote.ok()) << remote.status();
  const double served = WriterEventsPerSecond(remote->get());
  CHECK((*remote)->Close().ok());

  bench::PrintFigure("summary.events_per_sec_embedded", local, "events/s", raw);
  bench::PrintFigure("summary.events_per_sec_service", served, "events/s", raw);
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  return 0;
}

}  // namespace
}  // namespace overseer

int main() { return overseer::Main(); }
