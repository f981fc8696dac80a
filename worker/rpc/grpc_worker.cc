#include "worker/rpc/grpc_worker.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/executor/thread_pool.h"
#include "core/logging.h"
#include "core/rpc/channel.h"
#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"
#include "grpcpp/support/channel_arguments.h"
#include "worker/rpc/local_transfer.h"
#include "worker/rpc/tensor_chunks.h"

namespace overseer {
namespace {

// Runs the blocking RunGraph calls of GrpcWorkers without a running loop; grows rather
// than make a call wait (partitions of a step may wait on each other).
ThreadPool* RunGraphThreads() {
  static ThreadPool* pool = new ThreadPool(1);
  return pool;
}

// A connection to the local call socket at `address`: the one this process has open
// with the same keepalive if there is one, so that every GrpcWorker to a worker (a
// client's sessions, each with its own) shares one connection and its thread on each
// side; else a new one. The errors of LocalCallChannel::Connect.
absl::StatusOr<std::shared_ptr<LocalCallChannel>> SharedLocalCallChannel(const std::string& address,
                                                                         absl::Duration keepalive) {
  static absl::Mutex mu(absl::kConstInit);
  using Key = std::pair<std::string, int64_t>;
  static auto* open = new std::map<Key, std::weak_ptr<LocalCallChannel>>;  // Guarded by mu.
  const Key key(address, absl::ToInt64Nanoseconds(keepalive));
  std::shared_ptr<LocalCallChannel> channel;  // Let go after the lock: it may be the last.
  {
    absl::MutexLock lock(&mu);
    auto it = open->find(key);
    if (it != open->end()) channel = it->second.lock();
  }
  if (channel != nullptr && !channel->closed()) return channel;
  LocalCallOptions options;
  options.keepalive = keepalive;
  absl::StatusOr<std::unique_ptr<LocalCallChannel>> made =
      LocalCallChannel::Connect(address, options);
  if (!made.ok()) return made.status();
  channel = *std::move(made);
  absl::MutexLock lock(&mu);
  for (auto it = open->begin(); it != open->end();) {  // Forget the channels gone.
    it = it->second.expired() ? open->erase(it) : std::next(it);
  }
  (*open)[key] = channel;
  return channel;
}

}  // namespace

struct GrpcWorker::LocalCallRoute {
  LocalCallRoute(bool enabled, absl::Duration keepalive) : enabled(enabled), keepalive(keepalive) {}

  // The open connection to the worker's local call socket, or null.
  std::shared_ptr<LocalCallChannel> Open() ABSL_LOCKS_EXCLUDED(mu) {
    std::shared_ptr<LocalCallChannel> closed;  // Let go after the lock: it may join a thread.
    absl::MutexLock lock(&mu);
    if (channel == nullptr || !channel->closed()) return channel;
    closed = std::move(channel);
    claimed.clear();  // The next reply's socket is tried again.
    return nullptr;
  }

  // The local call socket a finished RunGraph's `context` names, if no connection to it
  // was tried yet (this caller claims the try); else "".
  std::string Claim(const grpc::ClientContext& context) ABSL_LOCKS_EXCLUDED(mu) {
    if (!enabled) return "";
    const auto& metadata = context.GetServerInitialMetadata();
    auto named = metadata.find(kLocalCallsMetadataKey);
    if (named == metadata.end()) return "";
    std::string address(named->second.data(), named->second.size());
    absl::MutexLock lock(&mu);
    if (address == claimed) return "";
    claimed = address;
    return address;
  }

  // Connects to the claimed `address` (it may block) and keeps the connection.
  void Connect(const std::string& address) ABSL_LOCKS_EXCLUDED(mu) {
    absl::StatusOr<std::shared_ptr<LocalCallChannel>> connected =
        SharedLocalCallChannel(address, keepalive);
    if (connected.ok()) {
      LOG(INFO) << "RunGraph calls to the worker that serves " << address
                << " go over that local call socket from now on";
    } else {
      LOG(INFO) << "RunGraph calls stay on gRPC: " << connected.status()
                << " (as for a worker on another host or in another network namespace)";
    }
    std::shared_ptr<LocalCallChannel> replaced;  // Let go after the lock.
    absl::MutexLock lock(&mu);
    if (address != claimed) return;  // Another socket was named since.
    replaced = std::move(channel);
    if (connected.ok()) channel = *std::move(connected);  // Else: not tried again.
  }

  const bool enabled;
  const absl::Duration keepalive;
  absl::Mutex mu;
  // The socket tried last, and the connection to it (null: none, or it could not
  // connect).
  std::string claimed ABSL_GUARDED_BY(mu);
  std::shared_ptr<LocalCallChannel> channel ABSL_GUARDED_BY(mu);
};

std::shared_ptr<grpc::Channel> NewWorkerChannel(const std::string& address,
                                                absl::Duration keepalive) {
  grpc::ChannelArguments args = PeerChannelArguments(keepalive);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kWorkerStreamWindowBytes);
  return NewChannel(address, args);
}

GrpcWorker::GrpcWorker(std::shared_ptr<grpc::Channel> channel, GrpcWorkerOptions options)
    : options_(options),
      channel_(std::move(channel)),
      stub_(WorkerService::NewStub(channel_)),
      recv_tensor_method_("/overseer.WorkerService/RecvTensor",
                          grpc::internal::RpcMethod::SERVER_STREAMING, channel_),
      route_(std::make_shared<LocalCallRoute>(options.local_calls, options.keepalive)) {}

absl::Duration GrpcWorker::StepTimeout(int64_t timeout_in_ms) const {
  return timeout_in_ms > 0 ? absl::Milliseconds(timeout_in_ms) + options_.timeout_grace
                           : options_.max_step_time;
}

absl::Status GrpcWorker::GetStatus(const GetStatusRequest& request, GetStatusResponse* response) {
  // A task that was just restarted may still be refused by this channel for a moment
  // (its reconnect backoff): wait for the channel, briefly, so that the task answers
  // with its new incarnation instead of looking dead.
  const absl::Duration wait = std::min(options_.rpc_timeout, kGetStatusWait);
  auto context = NewClientContext(wait);
  context->set_wait_for_ready(true);
  absl::Status status = FromGrpcStatus(stub_->GetStatus(context.get(), request, response));
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::UnavailableError(absl::StrCat("the task did not answer GetStatus within ",
                                               absl::FormatDuration(wait), ": ", status.message()));
  }
  return status;
}

absl::Status GrpcWorker::CreateWorkerSession(const CreateWorkerSessionRequest& request,
                                             CreateWorkerSessionResponse* response) {
  auto context = NewClientContext(options_.rpc_timeout);
  return FromGrpcStatus(stub_->CreateWorkerSession(context.get(), request, response));
}

absl::Status GrpcWorker::DeleteWorkerSession(const DeleteWorkerSessionRequest& request,
                                             DeleteWorkerSessionResponse* response) {
  auto context = NewClientContext(options_.rpc_timeout);
  return FromGrpcStatus(stub_->DeleteWorkerSession(context.get(), request, response));
}

absl::Status GrpcWorker::RegisterGraph(const RegisterGraphRequest& request,
                                       RegisterGraphResponse* response) {
  auto context = NewClientContext(options_.rpc_timeout);
  return FromGrpcStatus(stub_->RegisterGraph(context.get(), request, response));
}

absl::Status GrpcWorker::DeregisterGraph(const DeregisterGraphRequest& request,
                                         DeregisterGraphResponse* response) {
  auto context = NewClientContext(options_.rpc_timeout);
  return FromGrpcStatus(stub_->DeregisterGraph(context.get(), request, response));
}

absl::Status GrpcWorker::RunGraph(const RunGraphRequest& request, RunGraphResponse* response) {
  if (std::shared_ptr<LocalCallChannel> local = route_->Open()) {
    absl::Notification replied;
    absl::Status status;
    RunGraphLocal(*local, request, response, nullptr, [&](absl::Status s) {
      status = std::move(s);
      replied.Notify();
    });
    replied.WaitForNotification();
    return status;
  }
  auto context = NewClientContext(StepTimeout(request.timeout_in_ms()));
  return FromGrpcStatus(BlockingRunGraph(context.get(), request, response));
}

grpc::Status GrpcWorker::BlockingRunGraph(grpc::ClientContext* context,
                                          const RunGraphRequest& request,
                                          RunGraphResponse* response) {
  const grpc::Status status = stub_->RunGraph(context, request, response);
  if (const std::string address = route_->Claim(*context); !address.empty()) {
    route_->Connect(address);
  }
  return status;
}

void GrpcWorker::RunGraphLocal(LocalCallChannel& channel, const RunGraphRequest& request,
                               RunGraphResponse* response, CancellationManager* cancellation,
                               std::function<void(absl::Status)> done) {
  channel.Call(
      kLocalRunGraphMethod, request.SerializeAsString(),
      absl::Now() + StepTimeout(request.timeout_in_ms()), cancellation,
      [response, done = std::move(done)](absl::StatusOr<std::string> reply) {
        absl::Status status = reply.status();
        if (status.ok() && !response->ParseFromString(*reply)) {
          status = absl::InternalError("RunGraph's reply on the local call socket did not parse");
        }
        done(std::move(status));
      });
}

void GrpcWorker::RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                               CancellationManager* cancellation,
                               std::function<void(absl::Status)> done) {
  if (std::shared_ptr<LocalCallChannel> local = route_->Open()) {
    RunGraphLocal(*local, *request, response, cancellation, std::move(done));
    return;
  }
  struct Call {
    std::shared_ptr<LocalCallRoute> route;
    // Shared with the cancellation callback, which may run while the call ends.
    std::shared_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<RunGraphResponse>> reader;
    grpc::Status status;
    CancellationManager* cancellation = nullptr;
    CancellationManager::Token token = CancellationManager::kInvalidToken;
    std::function<void(absl::Status)> done;

    // On the loop's thread: ends `call` with `s`, after connecting to the local call
    // socket its reply named if that is new (on a pool thread: it may block).
    static void Finished(std::shared_ptr<Call> call, const grpc::Status& s) {
      const std::string address = call->route->Claim(*call->context);
      if (address.empty()) {
        End(std::move(call), s);
        return;
      }
      RunGraphThreads()->Schedule([call = std::move(call), s, address]() mutable {
        call->route->Connect(address);
        End(std::move(call), s);
      });
    }
    // Ends `call` with `s`: the call (its reader and client context) is released before
    // `done` runs, so that nothing of it is torn down on this thread while the caller,
    // told the call ended, tears down the channel and whatever else the call used.
    static void End(std::shared_ptr<Call> call, const grpc::Status& s) {
      if (call->token != CancellationManager::kInvalidToken) {
        call->cancellation->DeregisterCallback(call->token);
      }
      absl::Status status = FromGrpcStatus(s);
      std::function<void(absl::Status)> done = std::move(call->done);
      call.reset();
      done(std::move(status));
    }
  };
  auto call = std::make_shared<Call>();
  call->route = route_;
  call->context = NewClientContext(StepTimeout(request->timeout_in_ms()));
  call->cancellation = cancellation;
  call->done = std::move(done);
  if (cancellation != nullptr) {
    call->token =
        cancellation->RegisterCallback([context = call->context] { context->TryCancel(); });
    if (call->token == CancellationManager::kInvalidToken) {
      call->done(absl::CancelledError("RunGraph cancelled before it started"));
      return;
    }
  }
  if (options_.loop != nullptr && options_.loop->running()) {
    call->reader = stub_->PrepareAsyncRunGraph(call->context.get(), *request, options_.loop->cq());
    call->reader->StartCall();
    call->reader->Finish(response, &call->status, CompletionQueueLoop::NewTag([call](bool) mutable {
                           const grpc::Status status = call->status;
                           Call::Finished(std::move(call), status);
                         }));
    return;
  }
  // No loop: a blocking call on a pool thread. (gRPC 1.51's callback API is not used:
  // its calls to a dead peer sometimes tripped a reference-count assertion in gRPC
  // once a later channel reused the peer's subchannel.)
  RunGraphThreads()->Schedule([this, call, request, response]() mutable {
    const grpc::Status status = BlockingRunGraph(call->context.get(), *request, response);
    Call::End(std::move(call), status);
  });
}

absl::Status GrpcWorker::CleanupGraph(const CleanupGraphRequest& request,
                                      CleanupGraphResponse* response) {
  auto context = NewClientContext(options_.rpc_timeout);
  return FromGrpcStatus(stub_->CleanupGraph(context.get(), request, response));
}

absl::Status GrpcWorker::CleanupAll(const CleanupAllRequest& request,
                                    CleanupAllResponse* response) {
  auto context = NewClientContext(options_.rpc_timeout);
  return FromGrpcStatus(stub_->CleanupAll(context.get(), request, response));
}

std::string GrpcWorker::ReachableLocalSocket() {
  absl::MutexLock lock(&local_mu_);
  return local_reachable_ ? local_probed_ : std::string();
}

bool GrpcWorker::KnowsLocalSocket(const std::string& address) {
  absl::MutexLock lock(&local_mu_);
  return address == local_probed_;
}

void GrpcWorker::LearnLocalSocket(const std::string& address) {
  if (KnowsLocalSocket(address)) return;
  const bool reachable = CanReachLocalTransfer(address);
  absl::MutexLock lock(&local_mu_);
  local_probed_ = address;
  local_reachable_ = reachable;
}

void GrpcWorker::ForgetLocalSocket(const std::string& address) {
  absl::MutexLock lock(&local_mu_);
  if (address == local_probed_) local_probed_.clear();
}

absl::Status GrpcWorker::RecvTensor(const RecvTensorRequest& request,
                                    CancellationManager* cancellation, Tensor* tensor) {
  const std::string local_socket = options_.local_transfers ? ReachableLocalSocket() : "";
  RecvTensorRequest local_request;
  if (!local_socket.empty()) {
    local_request = request;
    local_request.set_accept_local(true);
  }
  // Shared with the cancellation callback, which may run while the call ends.
  std::shared_ptr<grpc::ClientContext> context =
      NewClientContext(StepTimeout(request.timeout_in_ms()));
  // Only a call that may get a local token reads a socket.
  std::shared_ptr<LocalTransferReceiver> receiver;
  if (!local_socket.empty()) receiver = std::make_shared<LocalTransferReceiver>();
  CancellationManager::Token token = CancellationManager::kInvalidToken;
  if (cancellation != nullptr) {
    token = cancellation->RegisterCallback([context, receiver] {
      context->TryCancel();
      if (receiver != nullptr) receiver->Cancel();
    });
    if (token == CancellationManager::kInvalidToken) {
      return absl::CancelledError("RecvTensor cancelled before it started");
    }
  }
  // The messages are read raw, so that the element bytes are copied once, from gRPC's
  // buffers into the tensor.
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          channel_.get(), recv_tensor_method_, context.get(),
          local_socket.empty() ? request : local_request));
  TensorChunkReader chunks;
  grpc::ByteBuffer chunk;
  absl::Status status;
  bool first = true;
  while (reader->Read(&chunk)) {
    if (status.ok()) status = chunks.AddEncoded(&chunk);
    if (status.ok() && first && !chunks.local_token().empty()) {
      if (receiver == nullptr) {
        status = absl::InvalidArgumentError("RecvTensor sent a local token that was not asked for");
        context->TryCancel();
        continue;
      }
      // The bytes come over the worker's local transfer socket; the call then ends.
      status = chunks.FillRest([&](absl::Span<char> rest) {
        return receiver->Receive(chunks.local_socket(), chunks.local_token(), rest);
      });
      if (!status.ok()) ForgetLocalSocket(chunks.local_socket());
    }
    first = false;
    if (!status.ok()) context->TryCancel();
  }
  const absl::Status finished = FromGrpcStatus(reader->Finish());
  if (token != CancellationManager::kInvalidToken) cancellation->DeregisterCallback(token);
  if (status.ok()) status = finished;
  if (!status.ok()) return status;
  absl::StatusOr<Tensor> t = chunks.Finish();
  if (!t.ok()) return t.status();
  *tensor = std::move(*t);
  if (options_.local_transfers && !chunks.local_socket().empty()) {
    LearnLocalSocket(chunks.local_socket());
  }
  return absl::OkStatus();
}

void GrpcWorker::RecvTensorAsync(const RecvTensorRequest& request,
                                 CancellationManager* cancellation,
                                 std::function<void(absl::StatusOr<Tensor>)> done) {
  // The call holds the loop: its operations start one after another, and the queue must
  // not shut down between them (a partial run's _Recv waits outside any call the loop
  // serves).
  if (options_.loop == nullptr || !options_.loop->HoldIfRunning()) {
    WorkerInterface::RecvTensorAsync(request, cancellation, std::move(done));
    return;
  }
  // Each operation's completion starts the next, on the loop's thread: StartCall, a Read
  // per message until the stream ends, Finish. A local token hands the socket's read
  // (it blocks) to a pool thread, which then starts the next Read.
  struct Call {
    GrpcWorker* worker = nullptr;  // Alive while the call is: the caller holds it.
    // Shared with the cancellation callback, which may run while the call ends.
    std::shared_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncReader<grpc::ByteBuffer>> reader;  // Before context.
    std::shared_ptr<LocalTransferReceiver> receiver;
    CancellationManager* cancellation = nullptr;
    CancellationManager::Token token = CancellationManager::kInvalidToken;
    std::function<void(absl::StatusOr<Tensor>)> done;
    TensorChunkReader chunks;
    grpc::ByteBuffer chunk;
    absl::Status status;  // The first error of the messages.
    bool first = true;
    grpc::Status finished;

    static void Read(std::shared_ptr<Call> call) {
      Call* c = call.get();
      c->reader->Read(&c->chunk, CompletionQueueLoop::NewTag([call](bool ok) mutable {
        if (ok) {
          OnMessage(std::move(call));
        } else {
          Finish(std::move(call));
        }
      }));
    }
    static void OnMessage(std::shared_ptr<Call> call) {
      if (call->status.ok()) call->status = call->chunks.AddEncoded(&call->chunk);
      const bool local = call->status.ok() && call->first && !call->chunks.local_token().empty();
      call->first = false;
      if (!local) {
        if (!call->status.ok()) call->context->TryCancel();
        Read(std::move(call));
        return;
      }
      if (call->receiver == nullptr) {
        call->status =
            absl::InvalidArgumentError("RecvTensor sent a local token that was not asked for");
        call->context->TryCancel();
        Read(std::move(call));
        return;
      }
      // The bytes come over the worker's local transfer socket; the call then ends.
      RunGraphThreads()->Schedule([call = std::move(call)]() mutable {
        Call* c = call.get();
        c->status = c->chunks.FillRest([c](absl::Span<char> rest) {
          return c->receiver->Receive(c->chunks.local_socket(), c->chunks.local_token(), rest);
        });
        if (!c->status.ok()) {
          c->worker->ForgetLocalSocket(c->chunks.local_socket());
          c->context->TryCancel();
        }
        Read(std::move(call));
      });
    }
    static void Finish(std::shared_ptr<Call> call) {
      Call* c = call.get();
      c->reader->Finish(&c->finished, CompletionQueueLoop::NewTag(
                                          [call](bool) mutable { End(std::move(call)); }));
    }
    // Released before `done` runs, as RunGraphAsync's calls are.
    static void End(std::shared_ptr<Call> call) {
      if (call->token != CancellationManager::kInvalidToken) {
        call->cancellation->DeregisterCallback(call->token);
      }
      absl::Status status = call->status;
      if (status.ok()) status = FromGrpcStatus(call->finished);
      absl::StatusOr<Tensor> tensor = status.ok() ? call->chunks.Finish() : status;
      GrpcWorker* worker = call->worker;
      const std::string& socket = call->chunks.local_socket();
      if (tensor.ok() && worker->options_.local_transfers && !socket.empty() &&
          !worker->KnowsLocalSocket(socket)) {
        // Probing a new socket connects to it, which may block: not on the loop's thread.
        RunGraphThreads()->Schedule([call = std::move(call), tensor = std::move(tensor)]() mutable {
          call->worker->LearnLocalSocket(call->chunks.local_socket());
          Done(std::move(call), std::move(tensor));
        });
        return;
      }
      Done(std::move(call), std::move(tensor));
    }
    static void Done(std::shared_ptr<Call> call, absl::StatusOr<Tensor> tensor) {
      std::function<void(absl::StatusOr<Tensor>)> done = std::move(call->done);
      CompletionQueueLoop* loop = call->worker->options_.loop;
      call.reset();
      loop->Release();
      done(std::move(tensor));
    }
  };
  auto call = std::make_shared<Call>();
  call->worker = this;
  call->context = NewClientContext(StepTimeout(request.timeout_in_ms()));
  call->cancellation = cancellation;
  call->done = std::move(done);
  const std::string local_socket = options_.local_transfers ? ReachableLocalSocket() : "";
  RecvTensorRequest local_request;
  if (!local_socket.empty()) {
    local_request = request;
    local_request.set_accept_local(true);
    call->receiver = std::make_shared<LocalTransferReceiver>();
  }
  if (cancellation != nullptr) {
    call->token =
        cancellation->RegisterCallback([context = call->context, receiver = call->receiver] {
          context->TryCancel();
          if (receiver != nullptr) receiver->Cancel();
        });
    if (call->token == CancellationManager::kInvalidToken) {
      options_.loop->Release();
      call->done(absl::CancelledError("RecvTensor cancelled before it started"));
      return;
    }
  }
  call->reader.reset(grpc::internal::ClientAsyncReaderFactory<grpc::ByteBuffer>::Create(
      channel_.get(), options_.loop->cq(), recv_tensor_method_, call->context.get(),
      local_socket.empty() ? request : local_request, /*start=*/false, nullptr));
  Call* c = call.get();
  c->reader->StartCall(CompletionQueueLoop::NewTag([call](bool) mutable {
    // A call that did not start fails its Read, and Finish says why.
    Call::Read(std::move(call));
  }));
}

absl::Status GrpcWorker::JobDone(const JobDoneRequest& request, JobDoneResponse* response) {
  auto context = NewClientContext(options_.rpc_timeout);
  return FromGrpcStatus(stub_->JobDone(context.get(), request, response));
}

GrpcWorkerCache::GrpcWorkerCache(const ClusterDef& cluster, GrpcWorkerOptions options)
    : options_(options) {
  for (const JobDef& job : cluster.job()) {
    for (const auto& [index, address] : job.tasks()) {
      addresses_[absl::StrCat("/job:", job.name(), "/replica:0/task:", index)] = address;
    }
  }
}

absl::StatusOr<std::shared_ptr<WorkerInterface>> GrpcWorkerCache::GetWorker(
    const std::string& task) {
  auto address = addresses_.find(task);
  if (address == addresses_.end()) {
    return absl::NotFoundError(absl::StrCat("no task ", task, " in the cluster"));
  }
  absl::MutexLock lock(&mu_);
  std::shared_ptr<WorkerInterface>& worker = workers_[task];
  if (worker == nullptr) {
    worker = std::make_shared<GrpcWorker>(NewWorkerChannel(address->second, options_.keepalive),
                                          options_);
  }
  return worker;
}

}  // namespace overseer
