#ifndef OVERSEER_CLIENT_GRAPH_OPS_H_
#define OVERSEER_CLIENT_GRAPH_OPS_H_

// Every op function of the graph-building API (namespace overseer::ops).

#include "client/graph/ops_array.h"     // IWYU pragma: export
#include "client/graph/ops_input.h"     // IWYU pragma: export
#include "client/graph/ops_math.h"      // IWYU pragma: export
#include "client/graph/ops_nn.h"        // IWYU pragma: export
#include "client/graph/ops_queue.h"     // IWYU pragma: export
#include "client/graph/ops_random.h"    // IWYU pragma: export
#include "client/graph/ops_state.h"     // IWYU pragma: export
#include "client/graph/ops_training.h"  // IWYU pragma: export
#include "client/graph/scope.h"         // IWYU pragma: export

#endif  // OVERSEER_CLIENT_GRAPH_OPS_H_
