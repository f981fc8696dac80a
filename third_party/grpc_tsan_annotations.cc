// ThreadSanitizer annotations for Debian's gRPC, compiled only under --config=tsan
// (docs/building.md); otherwise this file is empty.
//
// A completion queue hands an operation's tag from the thread that started the operation
// to the thread that reads its completion through lock-free queues inside libgrpc, which
// is not instrumented: TSan sees no happens-before between the two threads and reports a
// race on everything the handoff carries (a call's state, a reply, the CallOpSets of
// gRPC's inline C++ code). gRPC's contract is that what a thread did before starting an
// operation happens before that operation's completion is returned. These wrappers state
// it to TSan: the C functions that start an operation with a tag release on the tag, and
// the ones that return a completed tag acquire on it. They interpose the functions that
// libgrpc++ (and gRPC's inline code, through it) imports from libgrpc: --config=tsan
// links tests statically, so these definitions are in every executable, ahead of
// libgrpc's, which they call through dlsym(RTLD_NEXT).

#if defined(__SANITIZE_THREAD__)

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "grpc/grpc.h"

extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);

namespace {

// libgrpc's definition of `name`, which has the type of `F`.
template <typename F>
F* Real(F* /*wrapper*/, const char* name) {
  void* real = dlsym(RTLD_NEXT, name);
  if (real == nullptr) {
    std::fprintf(stderr, "grpc_tsan_annotations: no %s after this executable\n", name);
    std::abort();
  }
  return reinterpret_cast<F*>(real);
}

}  // namespace

extern "C" {

grpc_call_error grpc_call_start_batch(grpc_call* call, const grpc_op* ops, size_t nops, void* tag,
                                      void* reserved) {
  static auto* const real = Real(&grpc_call_start_batch, "grpc_call_start_batch");
  __tsan_release(tag);
  return real(call, ops, nops, tag, reserved);
}

grpc_call_error grpc_server_request_call(grpc_server* server, grpc_call** call,
                                         grpc_call_details* details,
                                         grpc_metadata_array* request_metadata,
                                         grpc_completion_queue* cq_bound_to_call,
                                         grpc_completion_queue* cq_for_notification,
                                         void* tag_new) {
  static auto* const real = Real(&grpc_server_request_call, "grpc_server_request_call");
  __tsan_release(tag_new);
  return real(server, call, details, request_metadata, cq_bound_to_call, cq_for_notification,
              tag_new);
}

grpc_call_error grpc_server_request_registered_call(grpc_server* server, void* registered_method,
                                                    grpc_call** call, gpr_timespec* deadline,
                                                    grpc_metadata_array* request_metadata,
                                                    grpc_byte_buffer** optional_payload,
                                                    grpc_completion_queue* cq_bound_to_call,
                                                    grpc_completion_queue* cq_for_notification,
                                                    void* tag_new) {
  static auto* const real =
      Real(&grpc_server_request_registered_call, "grpc_server_request_registered_call");
  __tsan_release(tag_new);
  return real(server, registered_method, call, deadline, request_metadata, optional_payload,
              cq_bound_to_call, cq_for_notification, tag_new);
}

void grpc_server_shutdown_and_notify(grpc_server* server, grpc_completion_queue* cq, void* tag) {
  static auto* const real =
      Real(&grpc_server_shutdown_and_notify, "grpc_server_shutdown_and_notify");
  __tsan_release(tag);
  real(server, cq, tag);
}

void grpc_channel_watch_connectivity_state(grpc_channel* channel,
                                           grpc_connectivity_state last_observed_state,
                                           gpr_timespec deadline, grpc_completion_queue* cq,
                                           void* tag) {
  static auto* const real =
      Real(&grpc_channel_watch_connectivity_state, "grpc_channel_watch_connectivity_state");
  __tsan_release(tag);
  real(channel, last_observed_state, deadline, cq, tag);
}

grpc_event grpc_completion_queue_next(grpc_completion_queue* cq, gpr_timespec deadline,
                                      void* reserved) {
  static auto* const real = Real(&grpc_completion_queue_next, "grpc_completion_queue_next");
  grpc_event event = real(cq, deadline, reserved);
  if (event.type == GRPC_OP_COMPLETE) __tsan_acquire(event.tag);
  return event;
}

grpc_event grpc_completion_queue_pluck(grpc_completion_queue* cq, void* tag, gpr_timespec deadline,
                                       void* reserved) {
  static auto* const real = Real(&grpc_completion_queue_pluck, "grpc_completion_queue_pluck");
  grpc_event event = real(cq, tag, deadline, reserved);
  if (event.type == GRPC_OP_COMPLETE) __tsan_acquire(event.tag);
  return event;
}

}  // extern "C"

#endif  // defined(__SANITIZE_THREAD__)
