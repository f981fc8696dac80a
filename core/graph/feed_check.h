#ifndef OVERSEER_CORE_GRAPH_FEED_CHECK_H_
#define OVERSEER_CORE_GRAPH_FEED_CHECK_H_

// Validating the values a step feeds: what each fed tensor accepts, found when the
// step's graph is pruned, and the checks of the values at run time. DirectSession and
// the master's sessions both use these, so that a Session answers a bad feed with the
// same error whichever runs it (client/session/session_conformance.h).

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/graph.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"
#include "core/types.h"
#include "proto/tensor.pb.h"

namespace overseer {

// What one fed tensor accepts.
struct FeedCheck {
  std::string name;             // "x:0" (a feed "x" reads as "x:0").
  DataType dtype = DT_INVALID;  // The tensor's dtype, without its ref type.
  bool placeholder = false;     // The tensor is a Placeholder's output.
  PartialShape shape;           // The Placeholder's declared shape, if `placeholder`.
};

// The checks of the values fed for `feeds` ("node:k" or "node") of `graph`, in order.
// `step_graph` is `graph` pruned for the step with those feeds (PruneGraph): a
// Placeholder left in it is one the step needs and no one feeds. Returns the errors of
// ResolveTensor for a feed not in `graph`, and INVALID_ARGUMENT naming the placeholder,
// its dtype and shape for an unfed Placeholder.
absl::StatusOr<std::vector<FeedCheck>> MakeFeedChecks(const Graph& graph,
                                                      const std::vector<std::string>& feeds,
                                                      const Graph& step_graph);

// OK if each `values[i]` may be fed for `checks[i]`; otherwise INVALID_ARGUMENT naming
// the first tensor whose value is empty (uninitialised), has another dtype, or has a
// shape its Placeholder does not accept. Precondition: as many values as checks.
absl::Status CheckFeeds(absl::Span<const FeedCheck> checks, absl::Span<const Tensor* const> values);

// The same for values still encoded, as a RunStep request carries them; also
// INVALID_ARGUMENT for a fed Placeholder value with an invalid shape.
absl::Status CheckFeeds(absl::Span<const FeedCheck> checks,
                        absl::Span<const TensorProto* const> values);

}  // namespace overseer

#endif  // OVERSEER_CORE_GRAPH_FEED_CHECK_H_
