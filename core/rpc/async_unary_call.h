#ifndef OVERSEER_CORE_RPC_ASYNC_UNARY_CALL_H_
#define OVERSEER_CORE_RPC_ASYNC_UNARY_CALL_H_

// One call of an asynchronous method served on a CompletionQueueLoop
// (core/rpc/completion_queue_loop.h), from its arrival to its end, and the loop that
// keeps such calls requested. For a unary method:
//
//   AwaitUnaryCall<FooRequest, FooResponse>(
//       loop,
//       [this](grpc::ServerContext* context, FooRequest* request,
//              grpc::ServerAsyncResponseWriter<FooResponse>* responder, void* tag) {
//         RequestFoo(context, request, responder, loop_->cq(), loop_->cq(), tag);
//       },
//       "the Foo call was cancelled", [this](auto* call) { Serve(call); });
//
// `serve` runs on the loop's thread as each call arrives (after the next one has been
// requested) and must end with call->Reply(...), from any thread. gRPC completes two
// operations of an arrived call on the loop: the reply and the call's end
// (AsyncNotifyWhenDone, which also says whether the client gave up: the call's
// `cancellation` is then cancelled with the given message); the last one frees the
// call and releases the loop, which Serve's caller held. A call of another kind (a
// server-streaming one: an AsyncServerCall with a grpc::ServerAsyncWriter as its
// `responder`) is awaited with AwaitCall, and its `serve` ends the call with the
// operation that sends its status, whose completion calls Unref.

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/rpc/completion_queue_loop.h"
#include "core/rpc/grpc_status.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/async_unary_call.h"

namespace overseer {

// What every call served this way holds, whatever its method's kind.
struct AsyncServerCall {
  virtual ~AsyncServerCall() = default;

  grpc::ServerContext context;
  // Cancelled when the client gives up (cancels, passes its deadline, goes away) or the
  // server shuts down while the call runs.
  CancellationManager cancellation;
  // When the call arrived.
  absl::Time start;

  // One of the call's last operations completed: its end (AsyncNotifyWhenDone) and the
  // one that sends its status, and any other that the call must outlive (an alarm),
  // counted in `pending` before it starts. The last frees the call and releases the loop.
  void Unref(CompletionQueueLoop* loop) {
    if (pending.fetch_sub(1) == 1) {
      delete this;
      loop->Release();
    }
  }

  std::atomic<int> pending{2};
};

template <typename Request, typename Response>
struct AsyncUnaryCall : AsyncServerCall {
  Request request;
  // Shared: what serves the call may keep the reply after the call has ended (the
  // master's request dedup answers a retry of a step from it, without a copy).
  std::shared_ptr<Response> response = std::make_shared<Response>();
  grpc::ServerAsyncResponseWriter<Response> responder{&context};

  // Sends `response` (or the error) and lets the call end. Once, from any thread.
  void Reply(CompletionQueueLoop* loop, const absl::Status& status) {
    void* tag = CompletionQueueLoop::NewTag([loop, this](bool) { Unref(loop); });
    if (status.ok()) {
      responder.Finish(*response, grpc::Status::OK, tag);
    } else {
      responder.FinishWithError(ToGrpcStatus(status), tag);
    }
  }
};

// Requests the next call of type `Call` (an AsyncServerCall with `request` and
// `responder` members) with `request_call(context, request, responder, tag)` and, as
// it arrives, requests the one after it and runs `serve(call)` with the loop held.
// When the server shuts down, the request completes with !ok, perhaps after the
// service is gone: then only the call and its end's tag are freed.
template <typename Call, typename RequestCall, typename Serve>
void AwaitCall(CompletionQueueLoop* loop, RequestCall request_call, std::string cancelled_message,
               Serve serve) {
  auto* call = new Call;
  void* done_tag = CompletionQueueLoop::NewTag([loop, call, cancelled_message](bool) {
    if (call->context.IsCancelled()) {
      call->cancellation.StartCancel(absl::CancelledError(cancelled_message));
    }
    call->Unref(loop);
  });
  call->context.AsyncNotifyWhenDone(done_tag);
  request_call(&call->context, &call->request, &call->responder,
               CompletionQueueLoop::NewTag([loop, call, done_tag, request_call,
                                            cancelled_message = std::move(cancelled_message),
                                            serve](bool ok) {
                 if (!ok) {  // The call never started: gRPC keeps done_tag.
                   CompletionQueueLoop::FreeTag(done_tag);
                   delete call;
                   return;
                 }
                 AwaitCall<Call>(loop, request_call, cancelled_message, serve);
                 loop->Hold();
                 call->start = absl::Now();
                 serve(call);
               }));
}

// AwaitCall of a unary method: `serve` must end with call->Reply(...).
template <typename Request, typename Response, typename RequestCall, typename Serve>
void AwaitUnaryCall(CompletionQueueLoop* loop, RequestCall request_call,
                    std::string cancelled_message, Serve serve) {
  AwaitCall<AsyncUnaryCall<Request, Response>>(loop, std::move(request_call),
                                               std::move(cancelled_message), std::move(serve));
}

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_ASYNC_UNARY_CALL_H_
