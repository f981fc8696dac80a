#ifndef OVERSEER_CLIENT_SUMMARY_SUMMARY_OPS_H_
#define OVERSEER_CLIENT_SUMMARY_SUMMARY_OPS_H_

// Summary ops for the graph-building API. Each returns a DT_STRING scalar holding a
// serialized Summary; ScalarSummary, HistogramSummary and TensorSummaryV2 also add
// their output to the graph's "summaries" collection (GraphKeys::kSummaries), which
// MergeAllSummaries merges, as TensorFlow's tf.summary.* and merge_all do.
//
//   ops::ScalarSummary(scope, "loss", loss);
//   ops::HistogramSummary(scope, "weights", w);
//   Output all = ops::MergeAllSummaries(scope);
//   ... session.Run({}, {all}, &out); writer->AddSummary(out[0].scalar<std::string>(), step);

#include <string>

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"
#include "proto/summary.pb.h"

namespace overseer {
namespace ops {

// One simple_value per element of `values` (float, double, int32, int64), tagged with
// the matching element of `tags` (same shape).
Output ScalarSummary(const Scope& scope, Input tags, Input values);

// A histogram of `values` with TensorFlow's default buckets, tagged `tag`.
Output HistogramSummary(const Scope& scope, Input tag, Input values);

// `tensor` as a tensor-style value with `metadata` (which names the TensorBoard
// plugin, see PluginMetadata).
Output TensorSummaryV2(const Scope& scope, Input tag, Input tensor,
                       const SummaryMetadata& metadata);

// The values of all `inputs` in one Summary. At run time, INVALID_ARGUMENT if two
// values share a tag.
Output MergeSummary(const Scope& scope, const InputList& inputs);

// MergeSummary of the "summaries" collection, or a null Output when it is empty.
// Records NOT_FOUND in the scope if a collected tensor is missing from the graph.
Output MergeAllSummaries(const Scope& scope);

}  // namespace ops

// Metadata for a tensor-style value read by TensorBoard plugin `plugin_name`
// ("scalars", "histograms", "text", ...), whose content proto is at version 0.
SummaryMetadata PluginMetadata(const std::string& plugin_name,
                               DataClass data_class = DATA_CLASS_UNKNOWN);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SUMMARY_SUMMARY_OPS_H_
