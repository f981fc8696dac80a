#ifndef OVERSEER_CORE_RPC_TESTING_HTTP_GET_H_
#define OVERSEER_CORE_RPC_TESTING_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace overseer {
namespace test {

// The whole HTTP/1.0 response (status line, headers and body) to GET `path` from
// 127.0.0.1:`port`; UNAVAILABLE if the connection fails.
inline absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket failed");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to port ", port));
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: localhost\r\n\r\n");
  if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return absl::UnavailableError("write failed");
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  ::close(fd);
  return response;
}

// The value of the unlabelled metric `name` on the /metrics page of 127.0.0.1:`port`;
// -1 if the page cannot be read or has no such sample.
inline double UnlabelledMetric(int port, const std::string& name) {
  absl::StatusOr<std::string> page = HttpGet(port, "/metrics");
  if (!page.ok()) return -1;
  for (absl::string_view line : absl::StrSplit(*page, '\n')) {
    if (!absl::ConsumePrefix(&line, name + " ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line, &value)) return value;
  }
  return -1;
}

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_TESTING_HTTP_GET_H_
