// Suppressions for what the sanitizers (--config=asan, --config=tsan; docs/building.md)
// find in Debian's libraries, not in Overseer's code. The sanitizer runtimes call these
// functions at start-up, so every binary carries them (//third_party:absl, which all of
// Overseer's code uses, depends on this), the servers the tests start included, without
// a file to point them at. Each entry names a library and says why the finding is not
// ours to fix. Without a sanitizer nothing calls them.

// Defined and exported under its C name, whatever the optimiser sees.
#define OVERSEER_SANITIZER_HOOK extern "C" __attribute__((used, visibility("default")))

// LeakSanitizer (part of --config=asan).
OVERSEER_SANITIZER_HOOK const char* __lsan_default_suppressions() {
  return
      // c-ares 1.18.1 (Debian 12's libc-ares2) leaks the copy of a name that
      // ares_gethostbyname answers from /etc/hosts (c-ares issue #439, fixed in later
      // releases); gRPC's default resolver looks up "localhost" that way, 10 bytes a
      // time. The stack has no frame of ours below gRPC.
      "leak:libcares.so.2\n";
}

// ThreadSanitizer (--config=tsan). Debian's gRPC (libgrpc, libgrpc++, libgpr, libupb) is
// not instrumented: TSan sees none of its own loads and stores, nor the happens-before
// that its lock-free queues and atomics create when it hands closures, slices and
// statuses from one of its threads to another (third_party/grpc_tsan_annotations.cc
// states the one handoff that carries our data: a completion queue's tag). What TSan
// does see of gRPC is its calls to intercepted functions (memcpy, sendmsg, recvmsg,
// operator new and delete), which then look unordered; every such report here had both
// accesses made by gRPC. A called_from_lib entry ignores exactly the intercepted calls
// that the named library makes itself; every access of Overseer's code stays checked.
OVERSEER_SANITIZER_HOOK const char* __tsan_default_suppressions() {
  return "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libupb.so\n"
         // Abseil's LowLevelAlloc maps the pages of a thread's absl::Mutex wait record
         // with mmap, which TSan counts as a write by that thread; the record then
         // reaches the thread that wakes it through the mutex's own wait queue, whose
         // accesses Abseil's TSan annotations hide from TSan (on purpose: they are the
         // lock's implementation). The mmap is the only access TSan sees unordered.
         "called_from_lib:libabsl_malloc_internal.so\n"
         // At thread exit Abseil frees the thread's lock record (ReclaimThreadIdentity,
         // from the TLS destructor) with LowLevelAlloc::Free, which reads the block's
         // header (its arena) before it takes the arena's lock. A second thread exiting
         // at the same time, coalescing a neighbouring block under that lock, shows as
         // the previous write: both stacks are Abseil's own teardown of a thread's
         // identity, with no frame of ours (seen once in sync_replicas_test, when the
         // workers' threads ended together).
         "race:ReclaimThreadIdentity\n"
         // gRPC's errors are absl::Status objects (with payloads: Cords, strings) that
         // it builds and annotates on one of its threads and reads on another, handing
         // them over through its own uninstrumented closures. Now that Abseil is
         // instrumented, TSan sees both sides of that handoff but not the ordering:
         // Server::ShutdownInternal's StatusCreate, StatusSetInt, StatusSetTime,
         // StatusAddChild on the main thread against StatusGetInt or
         // internal::StatusToProto in CompletionQueue::AsyncNextInternal on another (in
         // half of the runs of call_watch_test). Every such stack goes through these
         // libgrpc helpers over absl::Status, never through code of ours.
         "race:grpc_core::Status\n"
         "race:grpc_core::internal::StatusToProto\n";
}
