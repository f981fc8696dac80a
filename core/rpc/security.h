#ifndef OVERSEER_CORE_RPC_SECURITY_H_
#define OVERSEER_CORE_RPC_SECURITY_H_

// Who may call an Overseer server, and how a process proves who it is (docs/security.md).
//
// A process's security is set once, at start, from flags (InitSecurityFromFlags) and then
// used by every channel it opens (core/rpc/channel.h), every server it runs
// (core/rpc/server_runner.h) and every handler that authorizes a call (Authorize):
//
// - Mutual TLS (--tls_dir, or --tls_cert, --tls_key, --tls_ca): servers require a client
//   certificate signed by the CA, clients verify the server's certificate against the CA
//   and the address's host name. The files are watched and reloaded when they change
//   (cert-manager's rotation), every --tls_reload_seconds. A caller's identity is its
//   certificate's subject common name.
// - A cluster token (--cluster_token_file): every call carries the token in its
//   metadata, and servers compare it in constant time; a caller's identity is what it
//   claims (--identity). The token authenticates membership of the cluster, not the
//   role: any holder can claim any identity. Only TLS makes identities real.
// - Both: TLS authenticates, and the token must match as well.
// - Neither (the default): calls are not authenticated; servers then bind loopback
//   unless --insecure (server_runner.h).
//
// Authorization by identity, when security is on: a worker's control RPCs (everything
// but GetStatus and RecvTensor) only from --master_identities (default "master"); the
// master's JobDone and Reset only from --job_control_identities (default "chief");
// everything else from any authenticated member.
//
//   // In main, after flags are parsed:
//   RETURN_IF_ERROR(InitSecurityFromFlags("master"));
//   // In a handler:
//   if (absl::Status denied = Authorize(*context, Permission::kJobControl, "JobDone");
//       !denied.ok()) return ToGrpcStatus(denied);

#include <memory>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/client_interceptor.h"
#include "grpcpp/support/status.h"

ABSL_DECLARE_FLAG(std::string, tls_dir);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(int, tls_reload_seconds);
ABSL_DECLARE_FLAG(std::string, cluster_token_file);
ABSL_DECLARE_FLAG(std::string, identity);
ABSL_DECLARE_FLAG(std::string, master_identities);
ABSL_DECLARE_FLAG(std::string, job_control_identities);

namespace overseer {

// The metadata keys of the token and the claimed identity.
inline constexpr char kTokenMetadataKey[] = "x-overseer-token";
inline constexpr char kIdentityMetadataKey[] = "x-overseer-identity";

struct SecurityOptions {
  // PEM files: this process's certificate chain and key, and the CA that signs every
  // certificate of the cluster. All three or none.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  // How often the TLS files are checked for changes.
  absl::Duration tls_reload = absl::Seconds(10);
  // The cluster token (not a file name); empty: none.
  std::string token;
  // The identity this process claims with the token (TLS: its certificate says).
  std::string identity;
  // Who may call a worker's control RPCs, and the master's JobDone and Reset.
  std::vector<std::string> master_identities = {"master"};
  std::vector<std::string> job_control_identities = {"chief"};

  bool tls() const { return !tls_cert.empty(); }
  bool enabled() const { return tls() || !token.empty(); }

  // TLS with the files of `dir` in a Kubernetes TLS Secret's layout: tls.crt, tls.key
  // and ca.crt (what --tls_dir names).
  static SecurityOptions TlsDir(const std::string& dir);
};

// Options from the flags above: --tls_dir names a directory holding tls.crt, tls.key and
// ca.crt (a Kubernetes TLS Secret's layout); --cluster_token_file a file whose first
// line is the token. `default_identity` is the identity when --identity is empty.
// INVALID_ARGUMENT naming the flag for a half-given TLS set, a file that cannot be
// read, or an empty token.
absl::StatusOr<SecurityOptions> SecurityOptionsFromFlags(const std::string& default_identity);

// Checks `options` (the TLS files parse as PEM, the key matches the certificate) and
// makes them this process's. Call once, before any channel or server is made; later
// calls replace the options for channels and servers made after them (tests).
absl::Status InstallSecurity(SecurityOptions options);

// SecurityOptionsFromFlags, then InstallSecurity.
absl::Status InitSecurityFromFlags(const std::string& default_identity);

// This process's options (default: security off).
const SecurityOptions& ProcessSecurity();

// The credentials of a channel: TLS with the watched files, or insecure.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials();
// With a token: an interceptor factory that adds the token and the identity to every
// call's metadata; empty without one.
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ChannelInterceptors();
// With TLS: the server's credentials (client certificates required and verified);
// null without TLS.
std::shared_ptr<grpc::ServerCredentials> TlsServerCredentialsOrNull();

enum class Permission {
  kMember,      // Any authenticated caller.
  kMaster,      // --master_identities.
  kJobControl,  // --job_control_identities.
};

// OK if the caller of `context` may call `method` (named in the error); otherwise
// UNAUTHENTICATED (no valid token or certificate) or PERMISSION_DENIED (an identity
// not allowed), naming the method, the identity and who is allowed. Always OK with
// security off.
absl::Status Authorize(const grpc::ServerContext& context, Permission permission,
                       absl::string_view method);

// The caller's identity as Authorize sees it ("" if none).
std::string CallerIdentity(const grpc::ServerContext& context);

// Whether `a` equals `b`, in time that depends only on their lengths.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_SECURITY_H_
