#include "client/graph/indexed_slices.h"

#include <map>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "client/graph/ops_array.h"

namespace overseer {
namespace {

constexpr char kAttachment[] = "overseer.indexed_slices";

// The sparse forms recorded with one graph, by dense tensor. It holds Outputs (plain
// node pointers), never the graph itself.
class SlicesTable {
 public:
  void Record(const Output& dense, const IndexedSlices& slices) {
    absl::MutexLock lock(&mu_);
    by_dense_[dense] = slices;
  }
  std::optional<IndexedSlices> Find(const Output& dense) const {
    absl::MutexLock lock(&mu_);
    auto it = by_dense_.find(dense);
    if (it == by_dense_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<Output, IndexedSlices> by_dense_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

void RecordIndexedSlices(const Output& dense, const IndexedSlices& slices) {
  if (!dense.valid() || !slices.values.valid() || !slices.indices.valid()) return;
  ClientGraph* graph = dense.node()->graph();
  // Set once per graph; graphs are built from one thread, as TensorFlow's.
  std::shared_ptr<SlicesTable> table = graph->GetAttachment<SlicesTable>(kAttachment);
  if (table == nullptr) {
    table = std::make_shared<SlicesTable>();
    graph->SetAttachment(kAttachment, table);
  }
  table->Record(dense, slices);
}

std::optional<IndexedSlices> AsIndexedSlices(const Output& grad) {
  if (!grad.valid()) return std::nullopt;
  std::shared_ptr<SlicesTable> table =
      grad.node()->graph()->GetAttachment<SlicesTable>(kAttachment);
  if (table == nullptr) return std::nullopt;
  return table->Find(grad);
}

IndexedSlices DeduplicateIndexedSlices(const Scope& scope, const IndexedSlices& slices) {
  ops::UniqueOutput unique = ops::Unique(scope, slices.indices);
  Output count = ops::Size(scope, unique.y);
  return IndexedSlices{ops::UnsortedSegmentSum(scope, slices.values, unique.idx, count), unique.y,
                       slices.dense_shape};
}

}  // namespace overseer
