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
//   TestVar -> Ref(int32)                       a variable named after the node
//   TestAssign(ref: Ref(int32), value) -> Ref   assigns
//   TestCounter -> int32 (stateful)             0, 1, 2, ... per kernel instance

#include <string>
#include <vector>

namespace overseer {
namespace testing_kernels {

// The calling thread's id, as TestCheapThread records it.
std::string ThreadName();
// What TestRecord and TestCheapThread nodes with attr log=`log` recorded, in order.
std::vector<std::string> TestLog(const std::string& log);

}  // namespace testing_kernels
}  // namespace overseer

#endif  // OVERSEER_CORE_EXECUTOR_TEST_KERNELS_H_
