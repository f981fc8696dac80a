#ifndef OVERSEER_SERVER_SERVER_H_
#define OVERSEER_SERVER_SERVER_H_

// TensorFlow's tf.train.Server: one process serving a task of a cluster, both its worker
// service (the task's devices: variables, kernels, RecvTensor) and a master over the
// whole cluster, on one gRPC port. A trainer in the shape of the classic between-graph
// examples starts one in every task:
//
//   ServerOptions options;
//   options.cluster = *ClusterSpec::Parse("ps=h0:2222;worker=h1:2222,h2:2222");
//   options.job_name = "worker";
//   options.task_index = 0;
//   ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
//   if (job_name == "ps") { server->Join(); return; }   // Returns when the job is done.
//   ... build the graph with a ReplicaDeviceSetter over options.cluster ...
//   MonitoredTrainingSessionOptions mts;
//   mts.master = server->target();                      // "grpc://127.0.0.1:2222"
//
// Unlike TensorFlow's, Join returns once the chief signals the job done
// (SignalJobDone, MonitoredTrainingSession's end of training), so that ps tasks exit.
// The standalone master_server and worker_server stay for deployments that run the
// master apart; this is the same code in one process.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/cluster/cluster_spec.h"

namespace overseer {

struct ServerOptions {
  // Every job and task of the cluster ("job" -> addresses). This task's address gives
  // its port unless `port` says otherwise.
  ClusterSpec cluster;
  std::string job_name;
  int task_index = 0;
  // -1: the port of this task's address. 0: a free one, which replaces that port in
  // cluster() and in this process's master's view (target() says which): for a local
  // server, a test, or a task whose peers learn its address another way.
  int port = -1;
  // The address the port binds: loopback unless told otherwise; another address needs
  // `insecure` (no authentication or TLS; docs/security.md).
  std::string bind = "127.0.0.1";
  bool insecure = false;
  // Prometheus metrics of both services on this port; 0 picks one; negative: none.
  int metrics_port = -1;
  // Not empty: the bound gRPC and metrics ports (-1: none) are written there, one per
  // line, atomically (core/port_file.h), for a launcher that asked for port 0.
  std::string port_file;
  // Join returns when the chief signals the job done (else only on Stop).
  bool join_until_job_done = true;
};

// Thread-safe.
class Server {
 public:
  // Starts serving. INVALID_ARGUMENT for a task not in the cluster or a bad address;
  // UNAVAILABLE if the port is taken.
  static absl::StatusOr<std::unique_ptr<Server>> Create(ServerOptions options);
  // A one-task cluster ("local": a free loopback port) with its master: in-process
  // training with the distributed runtime's code (tf.train.Server.create_local_server).
  static absl::StatusOr<std::unique_ptr<Server>> CreateLocalServer();

  // Stops serving (in-flight calls drain) and waits.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // "grpc://host:port": the target of sessions on this server's master.
  std::string target() const;
  // The cluster with this task's bound port.
  const ClusterSpec& cluster() const;

  // Blocks until the server stops: Stop, or the job done (join_until_job_done).
  void Join();
  // Stops serving; in-flight calls drain. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace overseer

#endif  // OVERSEER_SERVER_SERVER_H_
