// Fuzzes a GraphDef through what Session::Create checks before it accepts a graph
// (ValidateAndIndexGraph: ops, attrs, inputs, dtypes, cycles, shape functions with the
// values of Consts), with every op of the library registered: any bytes get OK or a
// status, never a crash. The tensor memory budget is 256 MiB here, under libFuzzer's
// RSS limit.

#include <cstdint>

#include "core/graph/validate.h"
#include "core/tensor.h"
#include "proto/graph.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool budget = [] {
    overseer::SetTensorMemoryBudget(uint64_t{256} << 20);
    return true;
  }();
  (void)budget;
  overseer::GraphDef graph;
  if (!graph.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)overseer::ValidateAndIndexGraph(std::move(graph));
  return 0;
}
