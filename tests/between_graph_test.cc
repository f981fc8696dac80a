// TensorFlow's classic between-graph example on three processes
// (examples/between_graph_trainer: every task a Server): a ps, the chief and a non-chief
// worker, each binding a free loopback port itself and started one after another so
// that each knows the tasks it needs (a worker sees only the ps tasks and itself). Both
// workers train the model through their own server's master to the last step and reach
// the target accuracy; the chief ends after the non-chief and its end tells the ps the
// job is done: every process exits 0.
//
// No timing is asserted: each wait has a generous deadline only so a hang fails.

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testing/child_process.h"

namespace overseer {
namespace {

constexpr absl::Duration kWait = absl::Minutes(5);
// Stands for a task this process does not talk to (not dialled: device filters).
constexpr char kUnused[] = "127.0.0.1:1";

// The value after "final accuracy: " in `output`, or -1.
double FinalAccuracy(const std::string& output) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    double value = 0;
    if (absl::ConsumePrefix(&line, "final accuracy: ") && absl::SimpleAtod(line, &value)) {
      return value;
    }
  }
  return -1;
}

TEST(BetweenGraphTest, ClassicExampleOnThreeProcesses) {
  absl::StatusOr<std::string> bin = FindBinary("", "examples/between_graph_trainer");
  ASSERT_TRUE(bin.ok()) << bin.status();
  const std::string dir = TempDir();
  auto start = [&](const std::string& name, const std::string& ps_hosts,
                   const std::string& worker_hosts, const std::string& job,
                   int index) -> std::unique_ptr<ChildProcess> {
    const std::string port_file = absl::StrCat(dir, "/", name, ".port");
    std::remove(port_file.c_str());
    auto p = std::make_unique<ChildProcess>(
        std::vector<std::string>{*bin, "--ps_hosts=" + ps_hosts, "--worker_hosts=" + worker_hosts,
                                 "--job_name=" + job, absl::StrCat("--task_index=", index),
                                 "--any_port", "--port_file=" + port_file, "--synthetic",
                                 "--last_step=300", "--log_every=50"},
        absl::StrCat(dir, "/", name, ".log"));
    EXPECT_TRUE(p->Start().ok());
    return p;
  };
  auto port_of = [&](ChildProcess& p, const std::string& name) {
    absl::StatusOr<std::vector<int>> ports =
        p.WaitForPortFile(absl::StrCat(dir, "/", name, ".port"), kWait);
    EXPECT_TRUE(ports.ok()) << ports.status();
    return ports.ok() ? absl::StrCat("127.0.0.1:", ports->front()) : std::string(kUnused);
  };

  std::unique_ptr<ChildProcess> ps =
      start("ps0", kUnused, absl::StrCat(kUnused, ",", kUnused), "ps", 0);
  const std::string ps_address = port_of(*ps, "ps0");
  std::unique_ptr<ChildProcess> chief =
      start("worker0", ps_address, absl::StrCat(kUnused, ",", kUnused), "worker", 0);
  const std::string chief_address = port_of(*chief, "worker0");
  std::unique_ptr<ChildProcess> non_chief =
      start("worker1", ps_address, absl::StrCat(chief_address, ",", kUnused), "worker", 1);

  for (const auto& [p, name] : std::vector<std::pair<ChildProcess*, std::string>>{
           {non_chief.get(), "non-chief"}, {chief.get(), "chief"}, {ps.get(), "ps"}}) {
    absl::StatusOr<int> code = p->WaitForExit(kWait);
    ASSERT_TRUE(code.ok()) << name << ": " << code.status() << "\n" << p->Output();
    EXPECT_EQ(*code, 0) << name << ":\n" << p->Output();
  }
  EXPECT_GE(FinalAccuracy(chief->Output()), 0.9) << chief->Output();
  EXPECT_GE(FinalAccuracy(non_chief->Output()), 0.9) << non_chief->Output();
}

}  // namespace
}  // namespace overseer
