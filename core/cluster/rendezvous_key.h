#ifndef OVERSEER_CORE_CLUSTER_RENDEZVOUS_KEY_H_
#define OVERSEER_CORE_CLUSTER_RENDEZVOUS_KEY_H_

// TensorFlow's rendezvous key: "<src_device>;<src_incarnation>;<dst_device>;
// <tensor_name>;0:0", the incarnation as 16 lower-case hex digits. The producer's
// incarnation in the key lets a consumer detect a restarted producer.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace overseer {

std::string MakeRendezvousKey(absl::string_view src_device, uint64_t src_incarnation,
                              absl::string_view dst_device, absl::string_view tensor_name);

struct ParsedRendezvousKey {
  std::string src_device;
  uint64_t src_incarnation = 0;
  std::string dst_device;
  std::string tensor_name;
};

// INVALID_ARGUMENT naming `key` unless it has the five ';'-separated parts, a hex
// incarnation and non-empty devices and tensor name.
absl::StatusOr<ParsedRendezvousKey> ParseRendezvousKey(absl::string_view key);

}  // namespace overseer

#endif  // OVERSEER_CORE_CLUSTER_RENDEZVOUS_KEY_H_
