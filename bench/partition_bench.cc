// Benchmark of what each extra partition of a step costs (./dev bench):
//   grpc_session.extra_partition_cpu_us: CPU time (user + system, of every process of
//     the cluster and of the client) per step that each task beyond the first adds.
//     Graph "one": a Const and a Neg on worker 0 and an AddN of the Neg there; graph
//     "wide": a Const and a Neg on each of kWorkers workers and the AddN on worker 0, so
//     kWorkers - 1 more partitions, each sending its Neg to worker 0. Both run through
//     GrpcSession -> master_server -> worker_server processes on loopback (direct steps
//     off: both through the master), one step at a time, in windows of kWindowSeconds; the value is
//     (CPU per step of "wide" - CPU per step of "one") / (kWorkers - 1). Baseline: the CPU of one
//     raw gRPC unary round trip (this process and a child server), since TensorFlow's runtime pays
//     about one RPC per partition: the ratio says how many such round trips an extra partition
//     costs. The windows alternate (interleaved rounds, bench_util.h). CPU comes from
//     /proc/PID/stat (clock ticks of 10 ms; a window's thousands of steps make that a
//     few microseconds per step). Goal (issue 23): at most 100 us.
//   grpc_session.extra_partition_us: the same difference in wall time per step.
//   grpc.fanout_extra_target_cpu_us: the same difference for raw gRPC, against the raw
//     round trip: this process pings a relay process (bench::RawRelay: raw gRPC, empty
//     messages, one completion queue polled by one thread, as the master's), which pings
//     one raw server ("one"), or three in parallel and then a fourth ("wide", the
//     master's order for forwarding producers and their consumer), each a process of its
//     own; CPU of all six processes. What one RPC per partition costs with as many
//     processes taking turns on the cores as the cluster has.
//   grpc_session.extra_partition_cpu_us_vs_raw_fanout: extra_partition_cpu_us against
//     that raw figure in the same rounds: how many raw fanned-out RPCs an extra
//     partition costs.
//   tcp.fanout_extra_target_cpu_us: the same fan-out with no RPC framework, against the
//     raw gRPC fan-out's figure in the same rounds: the relay's raw TCP twin
//     (bench::RawRelay::PingTcp: fixed-size messages on loopback TCP connections kept
//     open, blocking calls on one thread) and each raw server's TCP stream server, the
//     same six processes. What an extra target costs in the kernel's loopback TCP and the
//     wake-ups of six processes on the cores alone: the floor under any transport between
//     processes on this host, and what gRPC adds above it.
//   grpc.stream_round_trip_cpu_us: the CPU (both processes) of one empty round trip as
//     two messages on a raw gRPC stream kept open, against the raw unary round trip: what a
//     design that sends each step's RunGraph on a stream per task could save per call.
// On stderr, where the CPU goes: each process's CPU per step (median over the rounds)
// for both graphs and the raw ping, which says which side of which call an extra
// partition costs, against the same side of a raw call.

#include <unistd.h>

#include <cstddef>
#include <functional>
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
#include "core/tensor.h"
#include "proto/graph.pb.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr int kWorkers = 4;
constexpr int kRounds = 7;
constexpr double kWindowSeconds = 0.6;

double CpuSecondsOf(pid_t pid) {
  const double cpu = bench::CpuSecondsOf(pid);
  CHECK(cpu >= 0) << "cannot read /proc/" << pid << "/stat";
  return cpu;
}

// Runs `call` for at least kWindowSeconds; returns the CPU seconds of `pids` (in all
// and each) and the wall seconds per call.
struct PerCall {
  double cpu = 0;
  std::vector<double> cpu_of;  // By process, in the order of `pids`.
  double wall = 0;
};
PerCall Measure(const std::vector<pid_t>& pids, const std::function<void()>& call) {
  std::vector<double> before;
  for (pid_t pid : pids) before.push_back(CpuSecondsOf(pid));
  const bench::CallWindow window = bench::TimeCalls(call, kWindowSeconds);
  const double calls = static_cast<double>(window.calls);
  PerCall m;
  for (size_t i = 0; i < pids.size(); ++i) {
    m.cpu_of.push_back((CpuSecondsOf(pids[i]) - before[i]) / calls);
    m.cpu += m.cpu_of.back();
  }
  m.wall = window.seconds / calls;
  return m;
}

// "client 112 master 224 worker:0 122 ...": the median over `windows` of each
// process's CPU per step, in microseconds.
std::string CpuByProcess(const std::vector<std::string>& names,
                         const std::vector<std::vector<double>>& windows) {
  std::string line;
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<double> us;
    for (const std::vector<double>& w : windows) us.push_back(1e6 * w[i]);
    absl::StrAppend(&line, i == 0 ? "" : " ", names[i], " ",
                    static_cast<int>(bench::Median(us) + 0.5));
  }
  return line;
}

// Const and Neg on each of `tasks` workers, AddN of the Negs on worker 0.
GraphDef Graph(int tasks) {
  GraphDef graph;
  NodeDef* sum = graph.add_node();
  sum->set_name("sum");
  sum->set_op("AddN");
  sum->set_device("/job:worker/replica:0/task:0");
  SetNodeAttr(sum, "N", static_cast<int64_t>(tasks));
  SetNodeAttr(sum, "T", DT_FLOAT);
  for (int k = 0; k < tasks; ++k) {
    const std::string device = absl::StrCat("/job:worker/replica:0/task:", k);
    NodeDef* c = graph.add_node();
    c->set_name(absl::StrCat("c", k));
    c->set_op("Const");
    c->set_device(device);
    SetNodeAttr(c, "dtype", DT_FLOAT);
    SetNodeAttr(c, "value", Tensor::Scalar<float>(static_cast<float>(k + 1)));
    NodeDef* neg = graph.add_node();
    neg->set_name(absl::StrCat("neg", k));
    neg->set_op("Neg");
    neg->set_device(device);
    neg->add_input(c->name());
    SetNodeAttr(neg, "T", DT_FLOAT);
    sum->add_input(neg->name());
  }
  return graph;
}

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  bench::RawServer raw(argv0);
  // The raw fan-out's targets: `raw` as task 0, and one more raw server per other task.
  std::vector<std::unique_ptr<bench::RawServer>> more_raw;
  std::vector<const bench::RawServer*> targets = {&raw};
  for (int k = 1; k < kWorkers; ++k) {
    more_raw.push_back(std::make_unique<bench::RawServer>(argv0));
    targets.push_back(more_raw.back().get());
  }
  bench::RawRelay relay(argv0, targets);
  std::vector<pid_t> fanout_pids = {::getpid(), relay.pid()};
  std::vector<std::string> fanout_names = {"client", "relay"};
  for (int k = 0; k < kWorkers; ++k) {
    fanout_pids.push_back(targets[k]->pid());
    fanout_names.push_back(absl::StrCat("server:", k));
  }

  test::LocalClusterOptions options;
  options.num_ps = 0;
  options.num_workers = kWorkers;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();
  std::vector<pid_t> pids = {::getpid(), (*cluster)->pid("master", 0)};
  std::vector<std::string> names = {"client", "master"};
  for (int k = 0; k < kWorkers; ++k) {
    pids.push_back((*cluster)->pid("worker", k));
    names.push_back(absl::StrCat("worker:", k));
  }

  SessionOptions session_options;
  session_options.target = (*cluster)->master_target();
  struct Model {
    std::unique_ptr<Session> session;
    float expected = 0;
  };
  // Every step through the master: graph "one" could run on its task directly
  // (client/session/grpc_session.h), and "wide" cannot.
  GrpcSessionOptions via_master;
  via_master.direct_steps = false;
  auto open = [&](int tasks) {
    auto session = GrpcSession::Connect(session_options, via_master);
    CHECK(session.ok()) << session.status();
    absl::Status created = (*session)->Create(Graph(tasks));
    CHECK(created.ok()) << created;
    return Model{*std::move(session), -static_cast<float>(tasks * (tasks + 1) / 2)};
  };
  Model one = open(1);
  Model wide = open(kWorkers);
  auto step = [](Model& m) {
    std::vector<Tensor> out;
    absl::Status s = m.session->Run({}, {"sum:0"}, {}, &out);
    CHECK(s.ok()) << s;
    CHECK(out.size() == 1 && out[0].scalar<float>() == m.expected) << out[0].DebugString();
  };

  std::vector<double> one_wall, wide_wall;
  std::vector<std::vector<double>> one_cpu_of, wide_cpu_of;
  bench::Rounds rounds("grpc_session.extra_partition");
  const std::vector<pid_t> raw_pids = {::getpid(), raw.pid()};
  std::vector<std::vector<double>> ping_cpu_of;
  const int ping = rounds.Add("ping", [&] {
    const PerCall m = Measure(raw_pids, [&] { raw.Ping(); });
    ping_cpu_of.push_back(m.cpu_of);
    return 1e6 * m.cpu;
  });
  const int on_stream = rounds.Add(
      "on_stream", [&] { return 1e6 * Measure(raw_pids, [&] { raw.PingOnStream(); }).cpu; });
  // A round of the raw fan-out: `call` through the relay, its CPU by process kept in
  // `cpu_of`.
  auto add_fanout = [&](const char* name, std::function<void()> call,
                        std::vector<std::vector<double>>* cpu_of) {
    return rounds.Add(name, [&, call = std::move(call), cpu_of] {
      const PerCall m = Measure(fanout_pids, call);
      cpu_of->push_back(m.cpu_of);
      return 1e6 * m.cpu;
    });
  };
  std::vector<std::vector<double>> raw_one_cpu_of, raw_wide_cpu_of;
  std::vector<std::vector<double>> tcp_one_cpu_of, tcp_wide_cpu_of;
  const int raw_one = add_fanout(
      "raw one", [&] { relay.Ping(0); }, &raw_one_cpu_of);
  const int raw_wide = add_fanout(
      "raw wide", [&] { relay.Ping(kWorkers - 1); }, &raw_wide_cpu_of);
  const int tcp_one = add_fanout(
      "tcp one", [&] { relay.PingTcp(0); }, &tcp_one_cpu_of);
  const int tcp_wide = add_fanout(
      "tcp wide", [&] { relay.PingTcp(kWorkers - 1); }, &tcp_wide_cpu_of);
  const int one_cpu = rounds.Add("one", [&] {
    const PerCall m = Measure(pids, [&] { step(one); });
    one_wall.push_back(1e6 * m.wall);
    one_cpu_of.push_back(m.cpu_of);
    return 1e6 * m.cpu;
  });
  const int wide_cpu = rounds.Add("wide", [&] {
    const PerCall m = Measure(pids, [&] { step(wide); });
    wide_wall.push_back(1e6 * m.wall);
    wide_cpu_of.push_back(m.cpu_of);
    return 1e6 * m.cpu;
  });
  rounds.Run(kRounds);
  // The warm-up round measured walls and each process's CPU too; the rounds' samples
  // leave it out (one "one" and one "wide" window per kept round).
  const size_t kept = rounds.samples(one_cpu).size();
  auto drop_warmup = [kept](auto& windows) {
    windows.erase(windows.begin(), windows.end() - static_cast<std::ptrdiff_t>(kept));
  };
  drop_warmup(one_wall);
  drop_warmup(wide_wall);
  drop_warmup(one_cpu_of);
  drop_warmup(wide_cpu_of);
  drop_warmup(ping_cpu_of);
  drop_warmup(raw_one_cpu_of);
  drop_warmup(raw_wide_cpu_of);
  drop_warmup(tcp_one_cpu_of);
  drop_warmup(tcp_wide_cpu_of);
  bench::Progress(absl::StrCat(
      "CPU per step by process, us (median of rounds): graph one: ",
      CpuByProcess(names, one_cpu_of), "; graph wide: ", CpuByProcess(names, wide_cpu_of),
      "; raw ping: ", CpuByProcess({"client", "server"}, ping_cpu_of),
      "; raw fan-out one: ", CpuByProcess(fanout_names, raw_one_cpu_of),
      "; raw fan-out wide: ", CpuByProcess(fanout_names, raw_wide_cpu_of),
      "; TCP fan-out one: ", CpuByProcess(fanout_names, tcp_one_cpu_of),
      "; TCP fan-out wide: ", CpuByProcess(fanout_names, tcp_wide_cpu_of)));
  // (wide - one) / (kWorkers - 1), round by round.
  auto per_extra_task = [&](int wide_index, int one_index) {
    std::vector<double> extra;
    for (size_t i = 0; i < rounds.samples(one_index).size(); ++i) {
      extra.push_back((rounds.samples(wide_index)[i] - rounds.samples(one_index)[i]) /
                      (kWorkers - 1));
    }
    return extra;
  };
  const std::vector<double> extra_cpu = per_extra_task(wide_cpu, one_cpu);
  const std::vector<double> raw_extra_cpu = per_extra_task(raw_wide, raw_one);
  const std::vector<double> tcp_extra_cpu = per_extra_task(tcp_wide, tcp_one);
  std::vector<double> extra_wall;
  for (size_t i = 0; i < one_wall.size(); ++i) {
    extra_wall.push_back((wide_wall[i] - one_wall[i]) / (kWorkers - 1));
  }
  bench::PrintFigure("grpc.stream_round_trip_cpu_us", "us", rounds.samples(on_stream),
                     rounds.samples(ping));
  bench::PrintFigure("grpc_session.extra_partition_cpu_us", "us", extra_cpu, rounds.samples(ping));
  bench::PrintFigure("grpc.fanout_extra_target_cpu_us", "us", raw_extra_cpu, rounds.samples(ping));
  bench::PrintFigure("grpc_session.extra_partition_cpu_us_vs_raw_fanout", "us", extra_cpu,
                     raw_extra_cpu);
  bench::PrintFigure("tcp.fanout_extra_target_cpu_us", "us", tcp_extra_cpu, raw_extra_cpu);
  bench::PrintFigureWithoutBaseline(
      "grpc_session.extra_partition_us", "us", extra_wall,
      "wall time per step that each task beyond the first adds (graph of 4 tasks against 1)");
  CHECK(one.session->Close().ok());
  CHECK(wide.session->Close().ok());
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
