#include "core/graph/feed_check.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/prune.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

absl::Status CheckDtype(const FeedCheck& check, DataType dtype) {
  if (dtype == check.dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("feed for '", check.name, "' has dtype ", DataTypeString(dtype), " but ",
                   check.placeholder ? "the placeholder wants " : "the tensor has dtype ",
                   DataTypeString(check.dtype)));
}

absl::Status CheckShape(const FeedCheck& check, const TensorShape& shape) {
  if (!check.placeholder || check.shape.IsCompatibleWith(shape)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("feed for '", check.name, "' has shape ",
                                                 shape.DebugString(), " but the placeholder wants ",
                                                 check.shape.DebugString()));
}

}  // namespace

absl::StatusOr<std::vector<FeedCheck>> MakeFeedChecks(const Graph& graph,
                                                      const std::vector<std::string>& feeds,
                                                      const Graph& step_graph) {
  std::vector<FeedCheck> checks;
  checks.reserve(feeds.size());
  for (const std::string& name : feeds) {
    ASSIGN_OR_RETURN(Endpoint e, ResolveTensor(graph, name, "feed"));
    const GraphNode& node = graph.node(e.node);
    FeedCheck check;
    check.name = absl::StrCat(node.name(), ":", e.index);
    check.dtype = RemoveRefType(node.output_types[e.index]);
    check.placeholder = node.def->op() == "Placeholder";
    if (check.placeholder) {
      check.shape = GetNodeAttrOr(*node.def, "shape", PartialShape::Unknown());
    }
    checks.push_back(std::move(check));
  }
  for (int id = 0; id < step_graph.num_nodes(); ++id) {
    const NodeDef& def = *step_graph.node(id).def;
    if (def.op() != "Placeholder") continue;
    return absl::InvalidArgumentError(
        absl::StrCat("You must feed a value for placeholder tensor '", def.name(), "' with dtype ",
                     DataTypeString(GetNodeAttrOr(def, "dtype", DT_INVALID)), " and shape ",
                     GetNodeAttrOr(def, "shape", PartialShape::Unknown()).DebugString()));
  }
  return checks;
}

absl::Status CheckFeeds(absl::Span<const FeedCheck> checks,
                        absl::Span<const Tensor* const> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const FeedCheck& check = checks[i];
    const Tensor& value = *values[i];
    if (!value.IsInitialized()) {
      return absl::InvalidArgumentError(
          absl::StrCat("feed for '", check.name, "' is an empty (uninitialised) Tensor"));
    }
    RETURN_IF_ERROR(CheckDtype(check, value.dtype()));
    RETURN_IF_ERROR(CheckShape(check, value.shape()));
  }
  return absl::OkStatus();
}

absl::Status CheckFeeds(absl::Span<const FeedCheck> checks,
                        absl::Span<const TensorProto* const> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const FeedCheck& check = checks[i];
    const TensorProto& value = *values[i];
    RETURN_IF_ERROR(CheckDtype(check, value.dtype()));
    if (!check.placeholder) continue;
    absl::StatusOr<TensorShape> shape = TensorShape::FromProto(value.tensor_shape());
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("feed for '", check.name, "': ", shape.status().message()));
    }
    RETURN_IF_ERROR(CheckShape(check, *shape));
  }
  return absl::OkStatus();
}

}  // namespace overseer
