#include "core/kernels/math/broadcast.h"

#include <algorithm>

#include "core/status_macros.h"

namespace overseer {

absl::StatusOr<BroadcastLayout> BroadcastLayout::Make(absl::Span<const TensorShape> shapes) {
  // Broadcast compatibility is pairwise per dimension, so checking pairs names the two
  // shapes that disagree.
  TensorShape out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (size_t j = i + 1; j < shapes.size(); ++j) {
      RETURN_IF_ERROR(BroadcastShapes(shapes[i], shapes[j]).status());
    }
    ASSIGN_OR_RETURN(out, BroadcastShapes(out, shapes[i]));
  }
  const int n = static_cast<int>(shapes.size());
  BroadcastLayout layout;
  layout.output_shape_ = out;
  layout.reshape_.resize(n);
  layout.bcast_.resize(n);
  layout.full_.assign(n, true);
  layout.single_.resize(n);
  for (int i = 0; i < n; ++i) layout.single_[i] = shapes[i].num_elements() == 1;

  const int rank = out.dims();
  std::vector<bool> prev_mask;
  for (int d = 0; d < rank; ++d) {
    const int64_t size = out.dim_size(d);
    if (size == 1) continue;
    std::vector<bool> mask(n);  // Operands broadcast along d.
    for (int i = 0; i < n; ++i) {
      const int k = shapes[i].dims() - rank + d;
      mask[i] = k < 0 || shapes[i].dim_size(k) == 1;
      if (mask[i]) layout.full_[i] = false;
    }
    if (!layout.out_dims_.empty() && mask == prev_mask) {
      layout.out_dims_.back() *= size;
      for (int i = 0; i < n; ++i) {
        (mask[i] ? layout.bcast_[i] : layout.reshape_[i]).back() *= size;
      }
      continue;
    }
    layout.out_dims_.push_back(size);
    for (int i = 0; i < n; ++i) {
      layout.reshape_[i].push_back(mask[i] ? 1 : size);
      layout.bcast_[i].push_back(mask[i] ? size : 1);
    }
    prev_mask = std::move(mask);
  }
  return layout;
}

BroadcastIndexer::BroadcastIndexer(const BroadcastLayout& layout, int operand)
    : out_dims_(layout.out_dims()), strides_(out_dims_.size()) {
  const std::vector<int64_t>& reshape = layout.reshape(operand);
  int64_t stride = 1;
  for (int d = static_cast<int>(out_dims_.size()) - 1; d >= 0; --d) {
    strides_[d] = reshape[d] == 1 ? 0 : stride;
    stride *= reshape[d];
  }
}

int64_t BroadcastIndexer::Map(int64_t out_index) const {
  int64_t in_index = 0;
  for (int d = static_cast<int>(out_dims_.size()) - 1; d >= 0; --d) {
    in_index += (out_index % out_dims_[d]) * strides_[d];
    out_index /= out_dims_[d];
  }
  return in_index;
}

}  // namespace overseer
