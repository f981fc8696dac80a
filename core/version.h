#ifndef OVERSEER_CORE_VERSION_H_
#define OVERSEER_CORE_VERSION_H_

namespace overseer {

// The version every Overseer program reports: in its start-up line and in
// overseer_build_info (core/metrics/metrics_endpoint.h).
inline constexpr char kOverseerVersion[] = "0.1.0";

}  // namespace overseer

#endif  // OVERSEER_CORE_VERSION_H_
