#ifndef OVERSEER_CHECKPOINT_STORE_LOCAL_READ_SERVER_H_
#define OVERSEER_CHECKPOINT_STORE_LOCAL_READ_SERVER_H_

// The store's side of short-circuit local reads (local_read.h, docs/checkpoint_format.md):
// Open (the OpenLocalRead RPC) resolves a checkpoint as every read does, checks the
// tensor names, opens the data files holding them read-only and keeps the descriptors
// under a random single-use token with a short expiry; a thread serving a Unix socket
// hands the descriptors to whoever presents the token, then forgets it. Unknown,
// expired and reused tokens are refused. Only files of the store's checkpoints (under
// its root) are ever opened.

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/local_read.h"
#include "core/clock.h"
#include "core/io/unix_socket.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "proto/checkpoint_store.pb.h"

namespace overseer {

struct LocalReadServerOptions {
  // Where to listen: a file path, or "@name" for the abstract namespace (local_read.h).
  std::string socket;
  // How long a token may wait to be redeemed; its descriptors are closed after that.
  absl::Duration token_ttl = absl::Seconds(30);
  // Tokens held at once (each holds its files open); Open fails RESOURCE_EXHAUSTED
  // beyond it.
  int max_tokens = 64;
  // Waited on for a client's token and for sending descriptors.
  absl::Duration socket_timeout = absl::Seconds(2);
  // Measures the tokens' time to live. Required; not owned.
  Clock* clock = nullptr;
  // Counters of local reads served, bytes handed out and tokens refused; may be null.
  prometheus::Registry* metrics = nullptr;
};

// Thread-safe.
class LocalReadServer {
 public:
  // Listens on options.socket and starts the thread that redeems tokens. `store` is
  // borrowed, must outlive the server, and must keep its files on the POSIX file system
  // (its data files are opened with open(2)). The errors of ListenLocalReadSocket.
  static absl::StatusOr<std::unique_ptr<LocalReadServer>> Start(CheckpointStore* store,
                                                                LocalReadServerOptions options);
  // Stops the thread, closes every descriptor still held and removes a socket file.
  ~LocalReadServer();

  // Grants a local read of `request.tensor_names` (every tensor if empty) of checkpoint
  // request.name of request.run: opens the data files that hold them and returns the
  // socket, the token, the files' names and each tensor's header, file, offset and
  // CRC32C. The errors a streaming read of the same request would report before its
  // first byte (INVALID_ARGUMENT for a bad run or name, NOT_FOUND naming a missing
  // checkpoint or tensor, DATA_LOSS for a damaged index or a data file that cannot be
  // opened); RESOURCE_EXHAUSTED while max_tokens tokens are held.
  absl::StatusOr<OpenLocalReadResponse> Open(const OpenLocalReadRequest& request);

  // Grants a local write of shard request.shard_id of pending checkpoint
  // request.checkpoint_id: the store creates the shard's data file
  // (CheckpointStore::OpenLocalShard, whose errors it returns) and the token stands for
  // one write-only descriptor of it; the writer closes the shard with
  // CheckpointStore::CloseLocalShard under the same token. RESOURCE_EXHAUSTED while
  // max_tokens tokens are held.
  absl::StatusOr<OpenLocalWriteResponse> OpenWrite(const OpenLocalWriteRequest& request);
  // Closes a local write's shard: CheckpointStore::CloseLocalShard.
  absl::StatusOr<CloseLocalWriteResponse> CloseWrite(const CloseLocalWriteRequest& request) {
    return store_->CloseLocalShard(request);
  }

  const std::string& socket() const { return options_.socket; }
  // Tokens redeemed (counted as their descriptors are sent, so a reader holding them
  // sees the count), the tensor bytes they covered, and tokens refused (unknown,
  // expired or reused).
  int64_t reads_served() const { return reads_served_.load(); }
  int64_t bytes_served() const { return bytes_served_.load(); }
  int64_t tokens_refused() const { return tokens_refused_.load(); }
  // Local write tokens redeemed.
  int64_t writes_served() const { return writes_served_.load(); }
  // Tokens issued and neither redeemed nor expired.
  int tokens_held() const;

 private:
  struct Grant {
    std::vector<UniqueFd> fds;
    int64_t bytes = 0;
    bool write = false;  // A local write's descriptor (OpenWrite).
    absl::Time expires;
  };

  LocalReadServer(CheckpointStore* store, LocalReadServerOptions options, UniqueFd listener,
                  UniqueFd wake);
  void Serve();
  void Redeem(int connection);
  void DropExpired() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED if max_tokens tokens are held.
  absl::Status CheckRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps `grant` under `token` until it is redeemed or expires.
  absl::Status AddGrant(const std::string& token, Grant grant);
  // The socket, `token` and its time to live in an Open or OpenWrite reply.
  template <typename Response>
  void SetGrantReply(std::string token, Response* response) const {
    response->set_socket(options_.socket);
    response->set_token(std::move(token));
    response->set_token_ttl_seconds(absl::ToDoubleSeconds(options_.token_ttl));
  }

  CheckpointStore* const store_;
  const LocalReadServerOptions options_;
  const UniqueFd listener_;
  UniqueFd wake_;  // An eventfd that stops Serve.

  mutable absl::Mutex mu_;
  std::map<std::string, Grant> grants_ ABSL_GUARDED_BY(mu_);

  std::atomic<int64_t> reads_served_{0};
  std::atomic<int64_t> bytes_served_{0};
  std::atomic<int64_t> tokens_refused_{0};
  std::atomic<int64_t> writes_served_{0};
  prometheus::Counter* reads_counter_ = nullptr;
  prometheus::Counter* writes_counter_ = nullptr;
  prometheus::Counter* bytes_counter_ = nullptr;
  prometheus::Counter* refused_counter_ = nullptr;
  std::thread thread_;  // Last: starts after the members it uses.
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_LOCAL_READ_SERVER_H_
