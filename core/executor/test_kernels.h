#ifndef OVERSEER_CORE_EXECUTOR_TEST_KERNELS_H_
#define OVERSEER_CORE_EXECUTOR_TEST_KERNELS_H_

// Test-only ops and kernels (all int32) for executor and session tests:
//   TestConstInt(value: int) -> int32           TestAddOne(x: int32) -> int32
//   TestFail(message: string) -> int32          fails INVALID_ARGUMENT `message`
//   TestBlockUntilCancelled -> int32            blocks until the step is cancelled
//   TestRendezvous(key, peer) -> int32          signals `key`, waits for `peer` (only
//                                               completes if run in parallel with it)
//   TestRecord(log: string) -> int32            appends its node name to TestLog(log)
//   TestCheapThread(log: string) -> int32       appends ThreadName() to TestLog(log);
//                                               cheap (OpKernel::IsExpensive false)
//   TestExpensiveThread(log: string) -> int32   the same, expensive
//   TestElementsThread(x, log: string,          the same, expensive, its cost following
//                      elements: int) -> int32  `elements` (OpKernel::ElementsTouched)
//   TestVar -> Ref(int32)                       a variable named after the node
//   TestAssign(ref: Ref(int32), value) -> Ref   assigns
//   TestCounter -> int32 (stateful)             0, 1, 2, ... per kernel instance
//   TestAsyncAddOne(x, log: string) -> int32    async (OpKernel::IsAsync): x + 1 when
//                                               CompleteAsync(log) completes it, its
//                                               step's cancellation status if that
//                                               comes first; log "inline" completes
//                                               within ComputeAsync

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace overseer {
namespace testing_kernels {

// The calling thread's id, as TestCheapThread records it.
std::string ThreadName();
// Waits until a TestAsyncAddOne with attr log=`log` waits, then completes the first
// such on the calling thread: x + 1, or `status` if not OK. Its step's cancellation may
// have completed it already. False if none waited within `wait` (a test's failure, not
// a timing: the default is far beyond any step a test runs).
[[nodiscard]] bool CompleteAsync(const std::string& log,
                                 const absl::Status& status = absl::OkStatus(),
                                 absl::Duration wait = absl::Seconds(60));
// What TestRecord and TestCheapThread nodes with attr log=`log` recorded, in order.
std::vector<std::string> TestLog(const std::string& log);

}  // namespace testing_kernels
}  // namespace overseer

#endif  // OVERSEER_CORE_EXECUTOR_TEST_KERNELS_H_
