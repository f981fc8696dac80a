// The checkpoint_store server: parameter servers stream checkpoint shards to it; it
// publishes TensorFlow V2 bundles atomically under --root/<run>/.
//
//   checkpoint_store_server --root=/tmp/ckpt --port=0 --metrics_port=0
//
// At start, leftovers of a crash (temp files, data files without an index) are removed.
// SIGTERM or SIGINT drains in-flight calls (commits running finish), then aborts every
// checkpoint still pending (its temp files are deleted) and exits 0.

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"
#include "core/logging.h"
#include "core/rpc/server_runner.h"

ABSL_FLAG(std::string, root, "", "Directory under which run directories hold checkpoints");

namespace overseer {
namespace {

int Main() {
  const std::string root = absl::GetFlag(FLAGS_root);
  if (root.empty()) {
    LOG(ERROR) << "--root is required";
    return 2;
  }
  ServerRunnerOptions options = ServerRunnerOptionsFromFlags("checkpoint_store");
  options.fixed_stream_window_bytes = kCheckpointStoreStreamWindowBytes;
  ServerRunner runner(options);
  auto store = CheckpointStore::Open(FileSystem::Posix(), root, Clock::Real(), runner.metrics());
  if (!store.ok()) {
    LOG(ERROR) << "cannot open --root: " << store.status().ToString();
    return 1;
  }
  GrpcCheckpointStoreService service(store->get());
  runner.AddService(&service);
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
  return overseer::Main();
}
