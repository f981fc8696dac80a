#include "core/rpc/grpc_target.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace overseer {
namespace {

absl::Status BadTarget(absl::string_view target, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("target '", target, "' is not of the form grpc://host:port[/path]: ", why));
}

bool AllDigits(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<GrpcTarget> ParseGrpcTarget(absl::string_view target) {
  if (!absl::StartsWith(target, kGrpcScheme)) {
    return BadTarget(target, "it does not start with grpc://");
  }
  absl::string_view rest = target.substr(kGrpcScheme.size());
  const size_t slash = rest.find('/');
  const absl::string_view address = rest.substr(0, slash);
  rest = slash == absl::string_view::npos ? absl::string_view() : rest.substr(slash + 1);

  // The host ends at the ':' before the port; a v6 address is in brackets.
  size_t colon;
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos) {
      return BadTarget(target, "the '[' of its host is not closed");
    }
    if (close == 1) return BadTarget(target, "its host is empty");
    colon = close + 1;
    if (colon < address.size() && address[colon] != ':') {
      return BadTarget(target, "its host ']' is not followed by ':port'");
    }
  } else {
    colon = address.find(':');
    if (colon == 0 || address.empty()) return BadTarget(target, "its host is empty");
  }
  if (colon >= address.size()) return BadTarget(target, "it has no port");
  const absl::string_view port = address.substr(colon + 1);
  int port_number = 0;
  if (port.empty() || !AllDigits(port) || !absl::SimpleAtoi(port, &port_number) ||
      port_number < 1 || port_number > 65535) {
    return BadTarget(target, absl::StrCat("its port '", port, "' is not a number from 1 to 65535"));
  }
  return GrpcTarget{std::string(address), std::string(rest)};
}

absl::StatusOr<std::string> ParseGrpcAddress(absl::string_view target) {
  absl::StatusOr<GrpcTarget> parsed = ParseGrpcTarget(target);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->rest.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target '", target, "' is not of the form grpc://host:port: it has a path after the port"));
  }
  return std::move(parsed->address);
}

}  // namespace overseer
