// The summary_writer server: trainers stream summaries to it, it writes TensorBoard
// event files under --logdir, one directory per run.
//
//   summary_writer_server --logdir=/tmp/logs --port=0 --metrics_port=0
//
// SIGTERM or SIGINT drains in-flight calls, then flushes and closes every file and
// exits 0.

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "core/clock.h"
#include "core/io/file_system.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/security.h"
#include "core/rpc/server_runner.h"
#include "summary_writer/periodic_flusher.h"
#include "summary_writer/rpc/grpc_summary_writer_service.h"
#include "summary_writer/summary_writer_service.h"

ABSL_FLAG(std::string, logdir, "", "Directory under which run directories are written");
ABSL_FLAG(int, flush_secs, 120, "Default seconds between flushes of each event file");
ABSL_FLAG(int, max_queue, 10, "Default events queued before they are written out");
ABSL_FLAG(int, max_open_writers, 1000,
          "OpenWriter fails RESOURCE_EXHAUSTED while this many event files are open");
ABSL_FLAG(int, writer_idle_close_seconds, 3600,
          "Close an event file that no call used for this long (a client that comes back "
          "opens a new one); 0: never");

namespace overseer {
namespace {

int Main() {
  const std::string logdir = absl::GetFlag(FLAGS_logdir);
  if (logdir.empty()) {
    LOG(ERROR) << "--logdir is required";
    return 2;
  }
  if (absl::GetFlag(FLAGS_flush_secs) < 1 || absl::GetFlag(FLAGS_max_queue) < 1 ||
      absl::GetFlag(FLAGS_max_open_writers) < 1 ||
      absl::GetFlag(FLAGS_writer_idle_close_seconds) < 0) {
    LOG(ERROR) << "--flush_secs, --max_queue and --max_open_writers must be at least 1, "
                  "--writer_idle_close_seconds at least 0";
    return 2;
  }
  const absl::Status made = FileSystem::Posix()->CreateDirs(logdir);
  if (!made.ok()) {
    LOG(ERROR) << "cannot use --logdir: " << made.ToString();
    return 1;
  }

  if (const absl::Status security = InitSecurityFromFlags("summary_writer"); !security.ok()) {
    LOG(ERROR) << security.message();
    return 2;
  }
  ServerRunner runner(ServerRunnerOptionsFromFlags("summary_writer"));
  SummaryWriterServiceOptions options;
  options.logdir = logdir;
  options.default_flush_interval = absl::Seconds(absl::GetFlag(FLAGS_flush_secs));
  options.default_max_queue = absl::GetFlag(FLAGS_max_queue);
  options.max_open_writers = absl::GetFlag(FLAGS_max_open_writers);
  options.idle_close = absl::Seconds(absl::GetFlag(FLAGS_writer_idle_close_seconds));
  EventWriterEnv env;
  env.clock = Clock::Real();
  SummaryWriterServiceImpl impl(options, env, runner.metrics());
  GrpcSummaryWriterService service(&impl, logdir);
  runner.AddService(&service, SummaryWriterService::service_full_name());
  runner.AddCollectable(service.rpc_metrics());
  const absl::Status started = runner.Start();
  if (!started.ok()) {
    LOG(ERROR) << started.ToString();
    return 1;
  }
  {
    PeriodicFlusher flusher(env.clock, absl::Seconds(1), [&impl] { impl.FlushDue(); });
    runner.SetServing(true);
    runner.WaitForTermination();
  }
  const absl::Status closed = impl.CloseAll();
  if (!closed.ok()) {
    LOG(ERROR) << "closing event files: " << closed.ToString();
    return 1;
  }
  LOG(INFO) << "summary_writer: every event file flushed and closed";
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  overseer::ApplyProcessSettings();
  return overseer::Main();
}
