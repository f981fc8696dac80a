#ifndef OVERSEER_CORE_ABSL_CONFIG_H_
#define OVERSEER_CORE_ABSL_CONFIG_H_

namespace overseer {

// Sets Abseil's mutex deadlock detection for this process: abort on the first
// lock-order inversion when the process runs under `bazel test` (TEST_TARGET is set,
// which the servers a multi-process test starts inherit), off otherwise (it costs about
// 120 ns instead of 40 ns per lock/unlock on the per-step paths). Process-wide; call it
// from main() before starting threads (the servers, trainers and benchmarks do, through
// ApplyProcessSettings). Tests turn detection on in their main
// (//third_party:gtest_main). See docs/settings.md.
void ConfigureMutexDeadlockDetection();

}  // namespace overseer

#endif  // OVERSEER_CORE_ABSL_CONFIG_H_
