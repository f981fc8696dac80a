#include "checkpoint_store/local_read_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/bundle.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// `path` opened read-only; DATA_LOSS worded as the streaming read words it.
absl::StatusOr<UniqueFd> OpenDataFile(const std::string& path, const std::string& tensor) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return absl::DataLossError(absl::StrCat("data file ", path, " of tensor ", tensor,
                                            " cannot be opened: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::DataLossError(
        absl::StrCat("data file ", path, " of tensor ", tensor, " is not a regular file"));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalReadServer>> LocalReadServer::Start(
    CheckpointStore* store, LocalReadServerOptions options) {
  if (options.clock == nullptr) {
    return absl::InvalidArgumentError("LocalReadServerOptions.clock is null");
  }
  ASSIGN_OR_RETURN(UniqueFd listener, ListenLocalReadSocket(options.socket));
  ASSIGN_OR_RETURN(UniqueFd wake, NewEventFd());
  return std::unique_ptr<LocalReadServer>(
      new LocalReadServer(store, std::move(options), std::move(listener), std::move(wake)));
}

LocalReadServer::LocalReadServer(CheckpointStore* store, LocalReadServerOptions options,
                                 UniqueFd listener, UniqueFd wake)
    : store_(store),
      options_(std::move(options)),
      listener_(std::move(listener)),
      wake_(std::move(wake)) {
  if (options_.metrics != nullptr) {
    auto counter = [&](const char* name, const char* help) {
      return &prometheus::BuildCounter().Name(name).Help(help).Register(*options_.metrics).Add({});
    };
    reads_counter_ = counter("overseer_checkpoint_store_local_reads_total",
                             "Local reads served: tokens redeemed for data file descriptors.");
    bytes_counter_ = counter("overseer_checkpoint_store_local_read_bytes_total",
                             "Tensor bytes covered by data file descriptors handed out.");
    writes_counter_ = counter("overseer_checkpoint_store_local_writes_total",
                              "Local writes served: tokens redeemed for a shard's data file "
                              "descriptor.");
    refused_counter_ = counter("overseer_checkpoint_store_local_read_tokens_refused_total",
                               "Local read tokens refused: unknown, expired or reused.");
  }
  thread_ = std::thread([this] { Serve(); });
}

LocalReadServer::~LocalReadServer() {
  WakeEventFd(wake_.get(), "local read socket");
  thread_.join();
  if (options_.socket[0] != '@') ::unlink(options_.socket.c_str());
}

int LocalReadServer::tokens_held() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(grants_.size());
}

void LocalReadServer::DropExpired() {
  const absl::Time now = options_.clock->Now();
  for (auto it = grants_.begin(); it != grants_.end();) {
    it = it->second.expires <= now ? grants_.erase(it) : std::next(it);
  }
}

absl::StatusOr<OpenLocalReadResponse> LocalReadServer::Open(const OpenLocalReadRequest& request) {
  ASSIGN_OR_RETURN(std::unique_ptr<BundleReader> reader,
                   store_->OpenBundle(request.run(), request.name()));
  std::vector<std::string> names(request.tensor_names().begin(), request.tensor_names().end());
  if (names.empty()) {
    for (const auto& entry : reader->entries()) names.push_back(entry.first);
  }
  OpenLocalReadResponse response;
  Grant grant;
  std::map<int, int> file_of_shard;
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(const BundleEntryProto* entry, reader->CheckedEntry(name));
    auto [it, inserted] = file_of_shard.try_emplace(entry->shard_id(), response.files_size());
    if (inserted) {
      const std::string path = reader->DataFile(entry->shard_id());
      ASSIGN_OR_RETURN(UniqueFd fd, OpenDataFile(path, name));
      grant.fds.push_back(std::move(fd));
      response.add_files(path);
    }
    LocalReadTensor* t = response.add_tensors();
    TensorHeader* header = t->mutable_tensor();
    header->set_name(name);
    header->set_dtype(entry->dtype());
    *header->mutable_shape() = entry->shape();
    header->set_size(entry->size());
    t->set_file(it->second);
    t->set_offset(entry->offset());
    t->set_crc32c(entry->crc32c());
    grant.bytes += entry->size();
  }
  ASSIGN_OR_RETURN(std::string token, NewSocketToken());
  RETURN_IF_ERROR(AddGrant(token, std::move(grant)));
  SetGrantReply(std::move(token), &response);
  return response;
}

absl::StatusOr<OpenLocalWriteResponse> LocalReadServer::OpenWrite(
    const OpenLocalWriteRequest& request) {
  ASSIGN_OR_RETURN(std::string token, NewSocketToken());
  {
    // Refused before the shard is claimed, so that a full table leaves it untouched.
    absl::MutexLock lock(&mu_);
    DropExpired();
    RETURN_IF_ERROR(CheckRoom());
  }
  ASSIGN_OR_RETURN(std::string path,
                   store_->OpenLocalShard(request.checkpoint_id(), request.shard_id(), token));
  // The store created the file under its root; O_NOFOLLOW refuses a link put there since.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    return absl::InternalError(absl::StrCat("shard ", request.shard_id(), " of checkpoint ",
                                            request.checkpoint_id(),
                                            ": its data file cannot be "
                                            "opened for a local write: ",
                                            std::strerror(errno)));
  }
  Grant grant;
  grant.write = true;
  grant.fds.push_back(std::move(fd));
  RETURN_IF_ERROR(AddGrant(token, std::move(grant)));
  OpenLocalWriteResponse response;
  SetGrantReply(std::move(token), &response);
  response.set_file(path.substr(path.rfind('/') + 1));
  return response;
}

absl::Status LocalReadServer::CheckRoom() const {
  if (static_cast<int>(grants_.size()) >= options_.max_tokens) {
    return absl::ResourceExhaustedError(
        absl::StrCat(grants_.size(), " local read and write tokens are waiting to be redeemed"));
  }
  return absl::OkStatus();
}

absl::Status LocalReadServer::AddGrant(const std::string& token, Grant grant) {
  grant.expires = options_.clock->Now() + options_.token_ttl;
  absl::MutexLock lock(&mu_);
  DropExpired();
  RETURN_IF_ERROR(CheckRoom());
  grants_[token] = std::move(grant);
  return absl::OkStatus();
}

void LocalReadServer::Serve() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    // Wakes every second to close the descriptors of tokens that expired.
    const int ready = ::poll(fds, 2, 1000);
    if (ready < 0 && errno != EINTR) {
      LOG(ERROR) << "local read socket: poll: " << std::strerror(errno);
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & POLLIN) != 0) {
      UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (connection.valid()) Redeem(connection.get());
    }
    absl::MutexLock lock(&mu_);
    DropExpired();
  }
}

void LocalReadServer::Redeem(int connection) {
  const timeval timeout = absl::ToTimeval(options_.socket_timeout);
  ::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  std::string token;
  std::vector<UniqueFd> unexpected;  // A client has no business sending descriptors.
  if (!ReceiveLocalReadPacket(connection, &token, &unexpected).ok()) return;
  Grant grant;
  bool found = false;
  {
    absl::MutexLock lock(&mu_);
    DropExpired();
    auto it = grants_.find(token);
    if (it != grants_.end()) {
      grant = std::move(it->second);
      grants_.erase(it);  // Single use, whether or not the client takes the descriptors.
      found = true;
    }
  }
  if (!found) {
    ++tokens_refused_;
    if (refused_counter_ != nullptr) refused_counter_->Increment();
    SendLocalReadPacket(connection, "ERR unknown, expired or already used token", {}).IgnoreError();
    return;
  }
  // Counted before the descriptors go, so that a reader that has them sees the count.
  if (grant.write) {
    ++writes_served_;
    if (writes_counter_ != nullptr) writes_counter_->Increment();
  } else {
    ++reads_served_;
    bytes_served_ += grant.bytes;
    if (reads_counter_ != nullptr) {
      reads_counter_->Increment();
      bytes_counter_->Increment(static_cast<double>(grant.bytes));
    }
  }
  std::vector<int> fds;
  for (const UniqueFd& fd : grant.fds) fds.push_back(fd.get());
  absl::Status sent = SendLocalReadPacket(
      connection, absl::StrCat("OK ", fds.size()),
      absl::MakeConstSpan(fds).subspan(0, std::min<size_t>(fds.size(), kMaxFdsPerPacket)));
  for (size_t i = kMaxFdsPerPacket; sent.ok() && i < fds.size(); i += kMaxFdsPerPacket) {
    sent =
        SendLocalReadPacket(connection, "+", absl::MakeConstSpan(fds).subspan(i, kMaxFdsPerPacket));
  }
  if (!sent.ok()) LOG(WARNING) << "cannot hand out local read descriptors: " << sent;
}

}  // namespace overseer
