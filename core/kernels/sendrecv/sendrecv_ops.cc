// _Send and _Recv: the two ends of a graph edge cut by partitioning. The master puts a
// _Send on the producer's device and a _Recv on the consumer's; both name the same
// rendezvous key through their attrs (core/rendezvous.h). client_terminated marks the
// ends fed or fetched by RunGraph rather than by another partition.

#include "core/op_registry.h"
#include "core/shape_inference.h"

namespace overseer {

REGISTER_OP("_Send")
    .Input("tensor: T")
    .Attr("T: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .Attr("client_terminated: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fn::NoOutputs);

REGISTER_OP("_Recv")
    .Output("tensor: T")
    .Attr("T: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .Attr("client_terminated: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fn::Unknown);

}  // namespace overseer
