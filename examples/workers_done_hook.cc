#include "examples/workers_done_hook.h"

#include <algorithm>
#include <vector>

#include "client/graph/ops.h"
#include "client/graph/ops_queue.h"
#include "core/logging.h"

namespace overseer {
namespace examples {

WorkersDoneHook WorkersDoneHook::Create(const Scope& root, bool is_chief, int num_non_chiefs,
                                        absl::Duration wait) {
  const Scope ps = root.WithDevice("/job:ps/task:0");
  ops::FIFOQueueAttrs attrs;
  attrs.shapes = {PartialShape({})};
  attrs.shared_name = "workers_done";
  Output queue = ops::FIFOQueue(ps.WithOpName("workers_done"), {DT_INT32}, attrs);
  WorkersDoneHook hook(is_chief, num_non_chiefs, wait);
  hook.enqueue_ =
      ops::QueueEnqueue(ps.WithOpName("workers_done/enqueue"), queue, {ops::Const(ps, 1)});
  hook.dequeue_ = ops::QueueDequeueMany(ps.WithOpName("workers_done/dequeue"), queue,
                                        ops::Const(ps, std::max(num_non_chiefs, 1)), {DT_INT32})[0];
  return hook;
}

absl::Status WorkersDoneHook::End(ClientSession* session) {
  if (!is_chief_) return session->Run({}, {}, {enqueue_}, nullptr);
  if (num_non_chiefs_ == 0) return absl::OkStatus();
  RunOptions options;
  options.set_timeout_in_ms(absl::ToInt64Milliseconds(wait_));
  std::vector<Tensor> out;
  absl::Status s = session->Run(options, {}, {dequeue_}, {}, &out, nullptr);
  if (!s.ok()) {
    LOG(WARNING) << "not every non-chief said it ended within " << wait_ << ": " << s
                 << "; ending anyway";
  }
  return absl::OkStatus();
}

}  // namespace examples
}  // namespace overseer
