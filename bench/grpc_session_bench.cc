// Benchmark of a step through the distributed runtime (./dev bench):
//   grpc_session.run_step_us: Session::Run of a one-node graph (fetching a scalar
//     Const) through GrpcSession to a master_server and one worker_server, all separate
//     processes on loopback, in microseconds per step; baseline: one raw gRPC unary
//     round trip (empty messages) between this process and a child process. The step's
//     signature runs on one task and writes nothing, so after its first step the
//     client runs it on the worker itself (a direct step, client/session/grpc_session.h:
//     one RunGraph, which after the first goes over the worker's local call socket,
//     worker/rpc/local_calls.h, not gRPC), renewing the route through the master every
//     MasterSession::kDirectStepIds steps or kDirectValidMs. Each side is one client
//     thread making one call at a time, in windows of kWindowSeconds that alternate
//     (interleaved rounds, bench_util.h): value and baseline are the medians of kRounds
//     windows, the ratio the median of per-round ratios, so that both see the same load
//     on a shared host. Goal (issue 23): a ratio <= 2.5 in every run.
//   grpc_session.master_step_us: the same step in a session with direct steps off, so
//     through the master (client->master RunStep, master->worker RunGraph), against the
//     ping in the same rounds. The master's RunStep runs on a completion queue loop, its
//     RunGraph goes over the worker's local call socket (its step continues on the
//     thread that reads the reply), and the worker runs this quick graph on the
//     thread that reads the call. docs/performance.md section 2 says where
//     such a step's time goes.
//   grpc_session.master_step_us_vs_relay: that step through the master against a raw
//     relayed ping in the same rounds: this process -> a relay process -> the raw server
//     and back (bench::RawRelay: raw gRPC, empty messages, one completion queue polled
//     by one thread in the relay, as the master serves a step), so the floor of a step
//     that a process in the middle relays. A ratio near 1 leaves nothing to the master's
//     own work; the ratio above 1 is what the client, master and worker add to raw gRPC.
//   grpc_session.relayed_ping_us: that relayed ping against the ping: the least ratio
//     to a ping that any step through a master can have on this host.
//   grpc_session.fetch_4MiB_us: the direct step fetching a 4 MiB Const instead of a
//     scalar; baseline: one raw gRPC transfer of 4 MiB (one message of a server stream,
//     parsed and copied out) from the child process, in interleaved windows. The step
//     moves the bytes once (worker -> client; through the master it would be twice).
//   master.threads_at_1000_sessions: the master process's threads (/proc/PID/status)
//     with 1,000 more sessions open, each having run a step; baseline: the same master
//     with only the measuring sessions open, in the same rounds. Goal: at most 64 (each
//     session held a thread of its own for its step cleanups: 1,015 threads).
//   master.step_us_at_1000_sessions: the step through the master on one session while
//     the 1,000 are open; baseline: the same step with none open, interleaved. Goal: a
//     ratio near 1.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/session/grpc_session.h"
#include "client/session/session.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/process_settings.h"
#include "core/tensor_eigen.h"
#include "proto/graph.pb.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr int kRounds = 8;
constexpr double kWindowSeconds = 0.3;
constexpr int kManySessions = 1000;
constexpr int kSessionRounds = 5;
constexpr int64_t kFetchBytes = 4 << 20;

// The threads of process `pid`.
double ThreadsOf(pid_t pid) {
  const double threads = bench::ThreadsOf(pid);
  CHECK(threads >= 0) << "cannot read /proc/" << pid << "/status";
  return threads;
}

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  bench::RawServer raw(argv0);
  bench::RawRelay relay(argv0, raw);

  test::LocalClusterOptions options;
  options.num_ps = 0;
  options.num_workers = 1;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();

  GraphDef graph;
  NodeDef* c = graph.add_node();
  c->set_name("c");
  c->set_op("Const");
  c->set_device("/job:worker/replica:0/task:0");
  SetNodeAttr(c, "dtype", DT_FLOAT);
  SetNodeAttr(c, "value", Tensor::Scalar<float>(1.0f));
  NodeDef* big = graph.add_node();
  big->set_name("big");
  big->set_op("Const");
  big->set_device("/job:worker/replica:0/task:0");
  SetNodeAttr(big, "dtype", DT_FLOAT);
  Tensor big_value(DT_FLOAT, TensorShape({kFetchBytes / 4}));
  for (int64_t i = 0; i < big_value.NumElements(); ++i) big_value.flat<float>()(i) = 1.0f;
  SetNodeAttr(big, "value", big_value);

  SessionOptions session_options;
  session_options.target = (*cluster)->master_target();
  auto session = NewSession(session_options);
  CHECK(session.ok()) << session.status();
  absl::Status created = (*session)->Create(graph);
  CHECK(created.ok()) << created;
  // The same graph in a session whose every step goes through the master.
  GrpcSessionOptions via_master;
  via_master.direct_steps = false;
  auto master_session = GrpcSession::Connect(session_options, via_master);
  CHECK(master_session.ok()) << master_session.status();
  created = (*master_session)->Create(graph);
  CHECK(created.ok()) << created;
  std::vector<Tensor> out, master_out;
  auto step = [&] {
    absl::Status s = (*session)->Run({}, {"c:0"}, {}, &out);
    CHECK(s.ok()) << s;
  };
  auto master_step = [&] {
    absl::Status s = (*master_session)->Run({}, {"c:0"}, {}, &master_out);
    CHECK(s.ok()) << s;
  };
  bench::Rounds rounds("grpc_session.run_step_us");
  const int ping = rounds.Add(
      "ping", [&] { return 1e6 * bench::MeanSecondsPerCall([&] { raw.Ping(); }, kWindowSeconds); });
  const int relayed = rounds.Add("relayed ping", [&] {
    return 1e6 * bench::MeanSecondsPerCall([&] { relay.Ping(); }, kWindowSeconds);
  });
  const int steps =
      rounds.Add("step", [&] { return 1e6 * bench::MeanSecondsPerCall(step, kWindowSeconds); });
  const int master_steps = rounds.Add("step via the master", [&] {
    return 1e6 * bench::MeanSecondsPerCall(master_step, kWindowSeconds);
  });
  rounds.Run(kRounds);
  CHECK(out.size() == 1 && out[0].scalar<float>() == 1.0f);
  CHECK(master_out.size() == 1 && master_out[0].scalar<float>() == 1.0f);
  bench::PrintFigure("grpc_session.run_step_us", "us", rounds.samples(steps), rounds.samples(ping));
  bench::PrintFigure("grpc_session.master_step_us", "us", rounds.samples(master_steps),
                     rounds.samples(ping));
  bench::PrintFigure("grpc_session.master_step_us_vs_relay", "us", rounds.samples(master_steps),
                     rounds.samples(relayed));
  bench::PrintFigure("grpc_session.relayed_ping_us", "us", rounds.samples(relayed),
                     rounds.samples(ping));

  // A step fetching kFetchBytes, against one raw transfer of as many bytes.
  std::vector<char> dest(kFetchBytes);
  std::vector<Tensor> fetched;
  bench::Rounds fetches("grpc_session.fetch_4MiB_us");
  const int transfer = fetches.Add("raw transfer", [&] {
    return 1e6 * bench::MeanSecondsPerCall(
                     [&] { raw.Transfer(kFetchBytes, kFetchBytes, dest.data()); }, kWindowSeconds);
  });
  const int fetch = fetches.Add("step", [&] {
    return 1e6 * bench::MeanSecondsPerCall(
                     [&] {
                       absl::Status s = (*session)->Run({}, {"big:0"}, {}, &fetched);
                       CHECK(s.ok()) << s;
                     },
                     kWindowSeconds);
  });
  fetches.Run(kRounds);
  CHECK(fetched.size() == 1 && fetched[0].NumElements() == kFetchBytes / 4 &&
        fetched[0].flat<float>()(kFetchBytes / 4 - 1) == 1.0f);
  bench::PrintFigure("grpc_session.fetch_4MiB_us", "us", fetches.samples(fetch),
                     fetches.samples(transfer));

  // The master with kManySessions more sessions open, each of which ran a step.
  const pid_t master = (*cluster)->pid("master", 0);
  std::vector<double> threads_alone, threads_many;
  auto open_many = [&] {
    std::vector<std::unique_ptr<Session>> many;
    for (int i = 0; i < kManySessions; ++i) {
      auto other = NewSession(session_options);
      CHECK(other.ok()) << other.status();
      absl::Status made = (*other)->Create(graph);
      CHECK(made.ok()) << made;
      std::vector<Tensor> ignored;
      absl::Status ran = (*other)->Run({}, {"c:0"}, {}, &ignored);
      CHECK(ran.ok()) << ran;
      many.push_back(*std::move(other));
    }
    return many;
  };
  bench::Rounds sessions("master.sessions");
  const int alone = sessions.Add("1 session", [&] {
    const double us = 1e6 * bench::MeanSecondsPerCall(master_step, kWindowSeconds);
    threads_alone.push_back(ThreadsOf(master));
    return us;
  });
  const int many = sessions.Add(absl::StrCat(kManySessions + 1, " sessions"), [&] {
    std::vector<std::unique_ptr<Session>> open = open_many();
    const double us = 1e6 * bench::MeanSecondsPerCall(master_step, kWindowSeconds);
    threads_many.push_back(ThreadsOf(master));
    for (auto& s : open) CHECK(s->Close().ok());
    return us;
  });
  sessions.Run(kSessionRounds, /*warmup_rounds=*/0);
  absl::Status closed_too = (*session)->Close();
  CHECK(closed_too.ok()) << closed_too;
  closed_too = (*master_session)->Close();
  CHECK(closed_too.ok()) << closed_too;
  bench::PrintFigure("master.threads_at_1000_sessions", "threads", threads_many, threads_alone);
  bench::PrintFigure("master.step_us_at_1000_sessions", "us", sessions.samples(many),
                     sessions.samples(alone));
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  // Measure with the settings the servers run with (docs/settings.md).
  overseer::ApplyProcessSettings();
  if (overseer::bench::IsRawServer(argc, argv)) return overseer::bench::RawServerMain(argc, argv);
  return overseer::Run(argv[0]);
}
