#ifndef OVERSEER_CORE_VERSION_H_
#define OVERSEER_CORE_VERSION_H_

namespace overseer {

// The version every Overseer program reports: in its start-up line and in
// overseer_build_info (core/metrics/metrics_endpoint.h).
inline constexpr char kOverseerVersion[] = "0.1.0";

// The GraphDef versions.producer every graph built by the client library carries:
// TensorFlow's graph version 27, the last whose history changed graph semantics (floor
// division and mod, the V2/V3 ops, Placeholder shapes enforced), which is what
// Overseer's ops follow. TensorFlow tools reading the graph apply no older-graph
// compatibility rules to it.
inline constexpr int kGraphDefProducer = 27;

}  // namespace overseer

#endif  // OVERSEER_CORE_VERSION_H_
