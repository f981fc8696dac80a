#ifndef OVERSEER_MASTER_PARTITIONER_H_
#define OVERSEER_MASTER_PARTITIONER_H_

// Partitioning: splits a placed step graph into one GraphDef per task.
//   - Every data edge between tasks becomes a _Send on the producer's device and a
//     _Recv on the consumer's (one pair per producer output and consumer task).
//   - Every control edge between tasks becomes a dummy Const on the producer's task
//     (control-dependent on the producer) sent to a _Recv that the consumer takes as
//     a control input.
//   - A fed tensor (a _Feed node of PruneGraph) becomes a client-terminated _Recv,
//     keyed by the feed name; a fetched tensor gets a client-terminated _Send on its
//     producer's device, keyed by the fetch name. RunGraph delivers and returns those.
// _Send/_Recv attrs (TensorFlow's): T, tensor_name, send_device,
// send_device_incarnation, recv_device, client_terminated.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/prune.h"
#include "proto/graph.pb.h"

namespace overseer {

inline constexpr char kSendOp[] = "_Send";
inline constexpr char kRecvOp[] = "_Recv";

// Where a feed is delivered or a fetch is read: the task's partition and the
// rendezvous key (RunGraphRequest.send name / recv_key).
struct PartitionEndpoint {
  std::string task;  // "/job:ps/replica:0/task:0".
  std::string key;
};

// A data or control edge between tasks: one _Send/_Recv pair.
struct PeerEdge {
  std::string from_task;
  std::string to_task;
  std::string key;  // The pair's rendezvous key.
};

struct PartitionedGraph {
  // Task name -> its partition (nodes carry their full device names).
  std::map<std::string, GraphDef> partitions;
  std::vector<PeerEdge> peer_edges;
  std::vector<PartitionEndpoint> feeds;    // One per PrunedGraph feed, in order.
  std::vector<PartitionEndpoint> fetches;  // One per PrunedGraph fetch, in order.
};

struct PartitionOptions {
  // The incarnation of the task that owns a full device name (the send side's
  // incarnation goes into every rendezvous key).
  std::function<uint64_t(const std::string& device)> incarnation;
  std::vector<std::string> feed_names;   // As given to PruneGraph (keys' tensor names).
  std::vector<std::string> fetch_names;  // As given to PruneGraph.
};

// `devices[id]` is the full device name of node `id` of `step.graph` (PlaceGraph).
// INVALID_ARGUMENT for a malformed device name or mismatched feed/fetch name counts.
absl::StatusOr<PartitionedGraph> PartitionGraph(const PrunedGraph& step,
                                                const std::vector<std::string>& devices,
                                                const PartitionOptions& options);

}  // namespace overseer

#endif  // OVERSEER_MASTER_PARTITIONER_H_
