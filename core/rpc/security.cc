#include "core/rpc/security.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "grpc/grpc.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "grpcpp/support/interceptor.h"

ABSL_FLAG(std::string, tls_dir, "",
          "Directory holding this process's TLS certificate (tls.crt), key (tls.key) and "
          "the cluster's CA (ca.crt), as a Kubernetes TLS Secret mounts them; turns on "
          "mutual TLS for every server and channel of the process (docs/security.md)");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of this process (with --tls_key and --tls_ca; instead of "
          "--tls_dir)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM certificate of the CA that signs the cluster's certificates");
ABSL_FLAG(int, tls_reload_seconds, 10,
          "How often the TLS files are checked for changes; changed files are used for new "
          "connections (certificate rotation)");
ABSL_FLAG(std::string, cluster_token_file, "",
          "File whose first line is the cluster token: every call carries it and every "
          "server requires it (compared in constant time); without TLS it travels in "
          "plaintext, so use it on a private network (docs/security.md)");
ABSL_FLAG(std::string, identity, "",
          "The identity this process claims with --cluster_token_file (default: its "
          "role, e.g. master, worker, trainer); with TLS its certificate's common name is "
          "its identity");
ABSL_FLAG(std::string, master_identities, "master",
          "Comma-separated identities that may call a worker's control RPCs (with TLS or "
          "a cluster token)");
ABSL_FLAG(std::string, job_control_identities, "chief",
          "Comma-separated identities that may end the job (JobDone) or Reset the "
          "cluster on the master (with TLS or a cluster token)");

namespace overseer {
namespace {

// What InstallSecurity installed: the options and the watcher of their TLS files,
// shared by every channel and server made until the next InstallSecurity.
struct Installed {
  SecurityOptions options;
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> provider;
};

absl::Mutex security_mu(absl::kConstInit);
// Every installation, the current last. Kept for the process's life: channels and
// servers made before a replacement hold raw pointers into the options they were
// made with (the interceptors).
std::vector<std::unique_ptr<Installed>>* installed ABSL_GUARDED_BY(security_mu) = nullptr;

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", path, ": cannot be read"));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::vector<std::string> SplitIdentities(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return out;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  for (const std::string& x : list) {
    if (x == item) return true;
  }
  return false;
}

class TokenInterceptor final : public grpc::experimental::Interceptor {
 public:
  TokenInterceptor(const std::string* token, const std::string* identity)
      : token_(token), identity_(identity) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      std::multimap<std::string, std::string>* metadata = methods->GetSendInitialMetadata();
      metadata->emplace(kTokenMetadataKey, *token_);
      metadata->emplace(kIdentityMetadataKey, *identity_);
    }
    methods->Proceed();
  }

 private:
  const std::string* token_;
  const std::string* identity_;
};

class TokenInterceptorFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  TokenInterceptorFactory(std::string token, std::string identity)
      : token_(std::move(token)), identity_(std::move(identity)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new TokenInterceptor(&token_, &identity_);
  }

 private:
  const std::string token_;
  const std::string identity_;
};

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(key);
  if (it == metadata.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = a.empty() ? 0 : static_cast<unsigned char>(a[i % a.size()]);
    diff |= x ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

SecurityOptions SecurityOptions::TlsDir(const std::string& dir) {
  const std::string base = absl::StrCat(absl::StripSuffix(dir, "/"), "/");
  SecurityOptions options;
  options.tls_cert = base + "tls.crt";
  options.tls_key = base + "tls.key";
  options.tls_ca = base + "ca.crt";
  return options;
}

absl::StatusOr<SecurityOptions> SecurityOptionsFromFlags(const std::string& default_identity) {
  SecurityOptions options;
  const std::string dir = absl::GetFlag(FLAGS_tls_dir);
  options.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key = absl::GetFlag(FLAGS_tls_key);
  options.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  if (!dir.empty()) {
    if (!options.tls_cert.empty() || !options.tls_key.empty() || !options.tls_ca.empty()) {
      return absl::InvalidArgumentError(
          "--tls_dir and --tls_cert/--tls_key/--tls_ca are alternatives; give one");
    }
    options = SecurityOptions::TlsDir(dir);
  } else if (options.tls_cert.empty() != options.tls_key.empty() ||
             options.tls_cert.empty() != options.tls_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert, --tls_key and --tls_ca come together (or --tls_dir for all three)");
  }
  options.tls_reload = absl::Seconds(std::max(1, absl::GetFlag(FLAGS_tls_reload_seconds)));
  const std::string token_file = absl::GetFlag(FLAGS_cluster_token_file);
  if (!token_file.empty()) {
    absl::StatusOr<std::string> contents = ReadFile(token_file, "cluster_token_file");
    if (!contents.ok()) return contents.status();
    absl::string_view first = *contents;
    first = first.substr(0, first.find('\n'));
    options.token = std::string(absl::StripAsciiWhitespace(first));
    if (options.token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--cluster_token_file=", token_file, ": its first line is empty"));
    }
  }
  options.identity = absl::GetFlag(FLAGS_identity);
  if (options.identity.empty()) options.identity = default_identity;
  options.master_identities = SplitIdentities(absl::GetFlag(FLAGS_master_identities));
  options.job_control_identities = SplitIdentities(absl::GetFlag(FLAGS_job_control_identities));
  return options;
}

absl::Status InstallSecurity(SecurityOptions options) {
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> watcher;
  if (options.tls()) {
    const std::pair<const std::string*, const char*> files[] = {{&options.tls_cert, "tls_cert"},
                                                                {&options.tls_key, "tls_key"},
                                                                {&options.tls_ca, "tls_ca"}};
    for (const auto& [path, flag] : files) {
      absl::StatusOr<std::string> contents = ReadFile(*path, flag);
      if (!contents.ok()) return contents.status();
      const bool is_key = path == &options.tls_key;
      if (contents->find(is_key ? "PRIVATE KEY-----" : "-----BEGIN CERTIFICATE-----") ==
          std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", *path, ": not a PEM ",
                                                       is_key ? "private key" : "certificate"));
      }
    }
    // With TLS on, gRPC stays initialised until the process ends. Otherwise the last
    // channel to go can drop gRPC's last reference on one of gRPC's own threads, and
    // gRPC then shuts down on a detached thread while the process exits: its threads
    // end during the exit, each freeing OpenSSL's state of that thread (its error queue,
    // its random generators) while LeakSanitizer scans, which reports that state as
    // leaked (security_test: gRPC shut down that way in 1 run of 120, and leaked in 1 of
    // 60-120 under ASan).
    [[maybe_unused]] static const bool kGrpcKept = (grpc_init(), true);
    watcher = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
        options.tls_key, options.tls_cert, options.tls_ca,
        static_cast<unsigned>(absl::ToInt64Seconds(options.tls_reload)));
  }
  absl::MutexLock lock(&security_mu);
  if (installed == nullptr) installed = new std::vector<std::unique_ptr<Installed>>();
  installed->push_back(
      std::make_unique<Installed>(Installed{std::move(options), std::move(watcher)}));
  return absl::OkStatus();
}

absl::Status InitSecurityFromFlags(const std::string& default_identity) {
  absl::StatusOr<SecurityOptions> options = SecurityOptionsFromFlags(default_identity);
  if (!options.ok()) return options.status();
  return InstallSecurity(*std::move(options));
}

const SecurityOptions& ProcessSecurity() {
  static const SecurityOptions* const kOff = new SecurityOptions();
  absl::MutexLock lock(&security_mu);
  return installed != nullptr ? installed->back()->options : *kOff;
}

namespace {
std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> Provider() {
  absl::MutexLock lock(&security_mu);
  return installed != nullptr ? installed->back()->provider : nullptr;
}
}  // namespace

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials() {
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> watcher = Provider();
  if (watcher == nullptr) return grpc::InsecureChannelCredentials();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(watcher);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  return grpc::experimental::TlsCredentials(options);
}

std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ChannelInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> out;
  const SecurityOptions& options = ProcessSecurity();
  if (!options.token.empty()) {
    out.push_back(std::make_unique<TokenInterceptorFactory>(options.token, options.identity));
  }
  return out;
}

std::shared_ptr<grpc::ServerCredentials> TlsServerCredentialsOrNull() {
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> watcher = Provider();
  if (watcher == nullptr) return nullptr;
  grpc::experimental::TlsServerCredentialsOptions options(watcher);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

std::string CallerIdentity(const grpc::ServerContext& context) {
  const SecurityOptions& options = ProcessSecurity();
  if (options.tls()) {
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth == nullptr || !auth->IsPeerAuthenticated()) return "";
    std::vector<grpc::string_ref> names = auth->FindPropertyValues("x509_common_name");
    if (names.empty()) return "";
    return std::string(names.front().data(), names.front().size());
  }
  return Metadata(context, kIdentityMetadataKey);
}

absl::Status Authorize(const grpc::ServerContext& context, Permission permission,
                       absl::string_view method) {
  const SecurityOptions& options = ProcessSecurity();
  if (!options.enabled()) return absl::OkStatus();
  if (!options.token.empty() &&
      !ConstantTimeEquals(Metadata(context, kTokenMetadataKey), options.token)) {
    return absl::UnauthenticatedError(
        absl::StrCat(method,
                     ": the call carries no valid cluster token (every call to this server "
                     "needs --cluster_token_file; docs/security.md)"));
  }
  const std::string identity = CallerIdentity(context);
  if (identity.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(method, ": the caller has no identity (",
                                                   options.tls()
                                                       ? "no verified client certificate with a "
                                                         "common name"
                                                       : "no x-overseer-identity with the token",
                                                   "; docs/security.md)"));
  }
  const std::vector<std::string>* allowed = nullptr;
  const char* flag = "";
  switch (permission) {
    case Permission::kMember:
      return absl::OkStatus();
    case Permission::kMaster:
      allowed = &options.master_identities;
      flag = "--master_identities";
      break;
    case Permission::kJobControl:
      allowed = &options.job_control_identities;
      flag = "--job_control_identities";
      break;
  }
  if (Contains(*allowed, identity)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(method, " may be called only by ", absl::StrJoin(*allowed, ", "), " (", flag,
                   "); the caller is \"", identity.substr(0, 128), "\""));
}

}  // namespace overseer
