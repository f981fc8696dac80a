#include "client/graph/embedding.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_math.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {

absl::StatusOr<Output> EmbeddingLookup(const Scope& scope, const std::vector<Output>& params,
                                       const Output& ids, PartitionStrategy strategy) {
  if (params.empty()) return absl::InvalidArgumentError("EmbeddingLookup: no params");
  if (!ids.valid()) return absl::InvalidArgumentError("EmbeddingLookup: ids is not a tensor");
  const DataType id_type = RemoveRefType(ids.dtype());
  if (id_type != DT_INT32 && id_type != DT_INT64) {
    return absl::InvalidArgumentError(
        absl::StrCat("EmbeddingLookup: ids must be int32 or int64, got ", DataTypeString(id_type)));
  }
  const DataType dtype = RemoveRefType(params[0].dtype());
  int64_t vocab = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    if (!params[p].valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("EmbeddingLookup: params[", p, "] is not a tensor"));
    }
    if (RemoveRefType(params[p].dtype()) != dtype) {
      return absl::InvalidArgumentError(absl::StrCat("EmbeddingLookup: params[", p, "] is ",
                                                     DataTypeString(params[p].dtype()),
                                                     " but params[0] is ", DataTypeString(dtype)));
    }
    const PartialShape shape = params[p].shape();
    if (shape.known_rank() && shape.rank() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("EmbeddingLookup: params[", p, "] must have rows, got a scalar"));
    }
    if (vocab >= 0) vocab = shape.known_rank() && shape.dim(0) >= 0 ? vocab + shape.dim(0) : -1;
  }
  const Scope s = scope.NewSubScope("embedding_lookup");
  if (params.size() == 1) {
    Output out = ops::GatherV2(s.ColocateWith(params[0]), params[0], ids, 0);
    RETURN_IF_ERROR(s.status());
    return out;
  }
  const int64_t n = static_cast<int64_t>(params.size());
  if (strategy == PartitionStrategy::kDiv && vocab < 0) {
    return absl::InvalidArgumentError(
        "EmbeddingLookup: the div strategy needs the first dimension of every shard known");
  }
  // Ids as a flat int64 vector; shard and row of each.
  Output flat = ops::Reshape(s, id_type == DT_INT64 ? ids : ops::Cast(s, ids, DT_INT64), {-1});
  Output shard, row;
  if (strategy == PartitionStrategy::kMod) {
    Output n_t = ops::Const(s, n);
    row = ops::Div(s, flat, n_t);
    shard = ops::Sub(s, flat, ops::Mul(s, row, n_t));
  } else {
    // Rows per shard: `per` + 1 for the first `extras` shards, `per` for the rest.
    const int64_t per = vocab / n, extras = vocab % n;
    Output big = ops::Const(s, per + 1);
    Output first_part = ops::Div(s, flat, big);
    Output shifted = ops::Sub(s, flat, ops::Const(s, extras));
    Output second_part = per > 0 ? ops::Div(s, shifted, ops::Const(s, per)) : first_part;
    shard = ops::Maximum(s, first_part, second_part);
    Output in_big = ops::Less(s, shard, ops::Const(s, extras));
    Output big_row = ops::Sub(s, flat, ops::Mul(s, first_part, big));
    Output small_row =
        per > 0 ? ops::Sub(s, shifted, ops::Mul(s, second_part, ops::Const(s, per))) : big_row;
    row = ops::Select(s, in_big, big_row, small_row);
  }
  Output shard32 = ops::Cast(s, shard, DT_INT32);
  std::vector<Output> rows = ops::DynamicPartition(s, row, shard32, n);
  std::vector<Output> positions =
      ops::DynamicPartition(s, ops::Range(s, 0, ops::Size(s, flat), 1), shard32, n);
  std::vector<Output> gathered;
  for (int64_t p = 0; p < n && p < static_cast<int64_t>(rows.size()); ++p) {
    gathered.push_back(ops::GatherV2(s.ColocateWith(params[p]), params[p], rows[p], 0));
  }
  Output stitched = ops::DynamicStitch(s, InputList(positions.begin(), positions.end()),
                                       InputList(gathered.begin(), gathered.end()));
  // ids.shape + the row shape.
  Output row_shape = ops::Slice(s, ops::Shape(s, params[0]), {1}, {-1});
  Output out = ops::Reshape(s.WithOpName("embedding"), stitched,
                            ops::ConcatV2(s, {ops::Shape(s, ids), row_shape}, 0));
  RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace overseer
