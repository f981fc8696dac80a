// Save and restore ops: they run on the device that holds the variables and stream
// tensors straight to and from a checkpoint store (checkpoint_store/location.h), so a
// trainer never relays tensor bytes. A save is begun and committed by the client
// (client/training/saver.h); each CheckpointSaveShard writes one shard of it.

#include "core/op_registry.h"
#include "core/shape_inference.h"

namespace overseer {

// Writes `tensors` under `tensor_names` as shard `shard_id` of the pending checkpoint
// `checkpoint_id` of the store at `location` (scalars).
REGISTER_OP("CheckpointSaveShard")
    .Input("location: string")
    .Input("checkpoint_id: string")
    .Input("tensor_names: string")
    .Input("tensors: dtypes")
    .Attr("shard_id: int >= 0")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetShapeFn(shape_fn::NoOutputs);

// Consistent saves take two steps (client/training/saver.h). CheckpointSnapshot keeps
// references to `tensors` (variables copy on write, so this copies nothing and later
// updates do not show) under `snapshot_id` and `shard_id` in its process, for at most
// ten minutes; a step holding it passes the update gate alone (core/graph/update_gate.h),
// so the snapshot is a cut of the training steps. CheckpointWriteSnapshot then streams
// that snapshot as shard `shard_id` of the pending checkpoint `checkpoint_id` of the
// store at `location` and drops it: NOT_FOUND if there is none (the task restarted, or
// the snapshot expired or was written already).
REGISTER_OP("CheckpointSnapshot")
    .Input("snapshot_id: string")
    .Input("tensor_names: string")
    .Input("tensors: dtypes")
    .Attr("shard_id: int >= 0")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetShapeFn(shape_fn::NoOutputs);

REGISTER_OP("CheckpointWriteSnapshot")
    .Input("location: string")
    .Input("checkpoint_id: string")
    .Input("snapshot_id: string")
    .Attr("shard_id: int >= 0")
    .SetIsStateful()
    .SetShapeFn(shape_fn::NoOutputs);

// Reads `tensor_names` of checkpoint `checkpoint` (a name such as "model.ckpt-100") of
// the store at `location`; each must have the dtype given in `dtypes`.
REGISTER_OP("CheckpointRestore")
    .Input("location: string")
    .Input("checkpoint: string")
    .Input("tensor_names: string")
    .Output("tensors: dtypes")
    .Attr("dtypes: list(type) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fn::Unknown);

// Reads `tensor_names` of checkpoint `checkpoint` of the store at `location` into
// `variables`, in place: a variable that holds a buffer of the tensor's dtype and shape
// that no reader shares is overwritten where it is, so a restore never holds the model
// twice; any other gets a new buffer (its old one is dropped first). Shapes are checked
// as Assign's validate_shape. While a tensor arrives its variable reads as
// uninitialized, and a restore that fails leaves every variable it began to write
// uninitialized (never half old, half new), so readiness asks for a restore again.
REGISTER_OP("CheckpointRestoreVariables")
    .Input("location: string")
    .Input("checkpoint: string")
    .Input("tensor_names: string")
    .Input("variables: Ref(dtypes)")
    .Attr("dtypes: list(type) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fn::NoOutputs);

}  // namespace overseer
