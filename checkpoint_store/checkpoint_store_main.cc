// The checkpoint_store server: parameter servers stream checkpoint shards to it; it
// publishes TensorFlow V2 bundles atomically under --root/<run>/.
//
//   checkpoint_store_server --root=/tmp/ckpt --port=0 --metrics_port=0
//
// Readers and shard writers on the same host read and write checkpoints without
// streaming them (short-circuit local reads and writes, docs/checkpoint_format.md): they
// collect descriptors of the data files at --local_read_socket, by default a Unix
// socket in the abstract namespace with a name chosen at start; --local_read_socket=
// turns that off.
//
// At start, leftovers of a crash (temp files, data files without an index) are removed.
// SIGTERM or SIGINT drains in-flight calls (commits running finish), then aborts every
// checkpoint still pending (its temp files are deleted) and exits 0.

#include <unistd.h>

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/local_read_server.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/security.h"
#include "core/rpc/server_runner.h"

ABSL_FLAG(std::string, root, "", "Directory under which run directories hold checkpoints");
ABSL_FLAG(std::string, local_read_socket, "@",
          "Unix socket at which readers on this host collect read-only descriptors of a "
          "checkpoint's data files, so that restores read the files directly instead of "
          "streaming them over gRPC (and writers of shards collect a write-only one, to "
          "write the shard's file themselves): a file path (at most 107 bytes), "
          "\"@NAME\" for NAME in Linux's abstract namespace (reachable from this host's "
          "network namespace only), \"@\" for an abstract name chosen at start; empty: no "
          "local reads or writes (everything streams)");

namespace overseer {
namespace {

int Main() {
  const std::string root = absl::GetFlag(FLAGS_root);
  if (root.empty()) {
    LOG(ERROR) << "--root is required";
    return 2;
  }
  if (const absl::Status security = InitSecurityFromFlags("checkpoint_store"); !security.ok()) {
    LOG(ERROR) << security.message();
    return 2;
  }
  ServerRunnerOptions options = ServerRunnerOptionsFromFlags("checkpoint_store");
  options.stream_window_bytes = kCheckpointStoreStreamWindowBytes;
  ServerRunner runner(options);
  auto store = CheckpointStore::Open(FileSystem::Posix(), root, Clock::Real(), runner.metrics());
  if (!store.ok()) {
    LOG(ERROR) << "cannot open --root: " << store.status().ToString();
    return 1;
  }
  std::string socket = absl::GetFlag(FLAGS_local_read_socket);
  if (socket == "@") {
    absl::BitGen gen;
    socket = absl::StrFormat("@overseer-checkpoint-store-%d-%016x", ::getpid(),
                             absl::Uniform<uint64_t>(gen));
  }
  std::unique_ptr<LocalReadServer> local_reads;
  if (!socket.empty()) {
    LocalReadServerOptions local_options;
    local_options.socket = socket;
    local_options.metrics = runner.metrics();
    local_options.clock = Clock::Real();
    auto started = LocalReadServer::Start(store->get(), local_options);
    if (!started.ok()) {
      LOG(ERROR) << "cannot serve local reads (--local_read_socket): " << started.status();
      return 1;
    }
    local_reads = *std::move(started);
    LOG(INFO) << "local reads at " << socket;
  }
  GrpcCheckpointStoreService service(store->get(), local_reads.get(), root);
  runner.AddService(&service, CheckpointStoreService::service_full_name());
  runner.AddCollectable(service.rpc_metrics());
  const absl::Status started = runner.Start();
  if (!started.ok()) {
    LOG(ERROR) << started.ToString();
    return 1;
  }
  runner.SetServing(true);
  runner.WaitForTermination();
  (*store)->Shutdown();
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  overseer::ApplyProcessSettings();
  return overseer::Main();
}
