// Suppressions for what the sanitizers (--config=asan, --config=tsan; docs/building.md)
// find in Debian's libraries, not in Overseer's code. The sanitizer runtimes call these
// functions at start-up; every binary links them through //core:base, so the test
// binaries and the servers they start agree without a file to point them at. Each entry
// names a library and says why the finding is not ours to fix. Without a sanitizer
// nothing calls them.

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
