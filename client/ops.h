#ifndef OVERSEER_CLIENT_OPS_H_
#define OVERSEER_CLIENT_OPS_H_

// Every op function of the graph-building API (namespace overseer::ops).

#include "client/ops_array.h"     // IWYU pragma: export
#include "client/ops_input.h"     // IWYU pragma: export
#include "client/ops_math.h"      // IWYU pragma: export
#include "client/ops_nn.h"        // IWYU pragma: export
#include "client/ops_queue.h"     // IWYU pragma: export
#include "client/ops_random.h"    // IWYU pragma: export
#include "client/ops_state.h"     // IWYU pragma: export
#include "client/ops_training.h"  // IWYU pragma: export
#include "client/scope.h"         // IWYU pragma: export

#endif  // OVERSEER_CLIENT_OPS_H_
