#ifndef OVERSEER_CHECKPOINT_STORE_LOCAL_READ_H_
#define OVERSEER_CHECKPOINT_STORE_LOCAL_READ_H_

// Short-circuit local reads of checkpoints (docs/checkpoint_format.md, "Local reads"):
// a store hands a reader on its own host read-only descriptors of a checkpoint's data
// files over a Unix domain socket (SCM_RIGHTS), and the reader preads each tensor
// straight into its memory and verifies its CRC32C against the store's index entry, so
// tensor bytes never cross a TCP socket. This file holds the socket protocol (both
// sides) and the reader; local_read_server.h the store's side.
//
// Protocol, on a SOCK_SEQPACKET Unix socket: the client sends one packet, the token
// (from the OpenLocalRead RPC). The server answers with one packet "ERR <message>", or
// with "OK <n>" followed by "+" packets, which together carry the n descriptors of the
// token's files (at most kMaxFdsPerPacket per packet, in OpenLocalReadResponse.files
// order); then it closes the connection. A token is redeemed at most once.
//
// Socket addresses: "@name" is `name` in Linux's abstract namespace (no file; visible
// to the processes of the host's network namespace); anything else is a file path of
// at most 107 bytes.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "checkpoint_store/checkpoint_store_interface.h"
#include "core/io/unix_socket.h"
#include "proto/checkpoint_store.pb.h"

namespace overseer {

// Descriptors per packet (the kernel accepts up to 253 per message).
constexpr int kMaxFdsPerPacket = 128;

// A listening socket at `address` (close-on-exec). A file path that holds a socket no
// process listens on (left by a killed server) is replaced; ALREADY_EXISTS if a server
// still listens there or the path is another kind of file. INVALID_ARGUMENT for an
// empty or too long address.
absl::StatusOr<UniqueFd> ListenLocalReadSocket(const std::string& address);
// A socket connected to `address`. UNAVAILABLE naming the address if nothing listens
// there (another host, another network or mount namespace, a stopped server).
absl::StatusOr<UniqueFd> ConnectLocalReadSocket(const std::string& address);

// Sends one packet of `text` carrying `fds` (at most kMaxFdsPerPacket).
absl::Status SendLocalReadPacket(int socket, absl::string_view text, absl::Span<const int> fds);
// Receives one packet into *text, appending the descriptors it carries to *fds
// (close-on-exec). UNAVAILABLE if the peer closed the connection or the socket's
// receive timeout passed; DATA_LOSS if the packet or its descriptors were truncated.
absl::Status ReceiveLocalReadPacket(int socket, std::string* text, std::vector<UniqueFd>* fds);

// The client's exchange: connects to `address`, presents `token` and returns the
// descriptors, waiting at most `timeout` for each packet. UNAVAILABLE if the socket
// cannot be connected; PERMISSION_DENIED with the server's message if it refuses the
// token; DATA_LOSS for a malformed answer.
absl::StatusOr<std::vector<UniqueFd>> RedeemLocalReadToken(const std::string& address,
                                                           const std::string& token,
                                                           absl::Duration timeout);

// Reads the tensors `grant` describes from `files` (the redeemed descriptors, in
// grant.files order) into `receiver`, one after the other in the grant's order: each
// tensor's bytes are pread straight into the memory receiver->Allocate gives and its
// CRC32C is checked before Received. DATA_LOSS naming `checkpoint` for a grant that
// does not fit `files` (checked before anything is allocated); DATA_LOSS naming the
// tensor and the file for a short file or a CRC mismatch (as a store's own read words
// it; the tensor is then never Received); the receiver's errors as they are.
// *allocated is set to whether receiver->Allocate was called (after which the read
// cannot be started again).
absl::Status ReadTensorsLocally(const std::string& checkpoint, const OpenLocalReadResponse& grant,
                                const std::vector<UniqueFd>& files, TensorReceiver* receiver,
                                bool* allocated);

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_LOCAL_READ_H_
