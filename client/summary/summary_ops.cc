#include "client/summary/summary_ops.h"

#include "absl/strings/str_cat.h"
#include "client/graph/graph_builder.h"

namespace overseer {
namespace ops {
namespace {

Output Collect(const Scope& scope, Output summary) {
  if (summary.valid()) scope.graph()->AddToCollection(GraphKeys::kSummaries, summary.name());
  return summary;
}

}  // namespace

Output ScalarSummary(const Scope& scope, Input tags, Input values) {
  return Collect(
      scope, FirstOutput(NodeBuilder(scope, "ScalarSummary").Input(tags).Input(values).Finalize()));
}

Output HistogramSummary(const Scope& scope, Input tag, Input values) {
  return Collect(
      scope,
      FirstOutput(NodeBuilder(scope, "HistogramSummary").Input(tag).Input(values).Finalize()));
}

Output TensorSummaryV2(const Scope& scope, Input tag, Input tensor,
                       const SummaryMetadata& metadata) {
  return Collect(scope, FirstOutput(NodeBuilder(scope, "TensorSummaryV2")
                                        .Input(tag)
                                        .Input(tensor)
                                        .Input(Input(metadata.SerializeAsString()))
                                        .Finalize()));
}

Output MergeSummary(const Scope& scope, const InputList& inputs) {
  return FirstOutput(NodeBuilder(scope, "MergeSummary").Input(inputs).Finalize());
}

Output MergeAllSummaries(const Scope& scope) {
  const std::vector<std::string> names = scope.graph()->GetCollection(GraphKeys::kSummaries);
  if (names.empty()) return Output();
  InputList inputs;
  for (const std::string& name : names) {
    absl::StatusOr<Output> output = scope.graph()->FindOutput(name);
    if (!output.ok()) {
      scope.UpdateStatus(absl::NotFoundError(absl::StrCat(
          "summary tensor '", name, "' of the summaries collection is not in the graph")));
      return Output();
    }
    inputs.push_back(*output);
  }
  return MergeSummary(scope, inputs);
}

}  // namespace ops

SummaryMetadata PluginMetadata(const std::string& plugin_name, DataClass data_class) {
  SummaryMetadata metadata;
  metadata.mutable_plugin_data()->set_plugin_name(plugin_name);
  metadata.set_data_class(data_class);
  return metadata;
}

}  // namespace overseer
