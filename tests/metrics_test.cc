// Every /metrics page of a training job, read as a real Prometheus reads it: a cluster of
// real processes (master, ps, worker, checkpoint store, event writer), each serving
// /metrics on a free port, and a chief and a non-chief cluster_trainer serving theirs.
// While training runs, each page must pass `promtool check metrics` (Debian's
// prometheus package: the exposition format and Prometheus' naming lint, which read
// the page on stdin) and hold the families docs/metrics.md lists for its component,
// with values that say training happened. A ps is then killed and restarted: the
// trainers' recoveries and the master's RunStep errors show on the pages.
//
// No timing is asserted: each wait has a generous deadline only so that a hang fails.

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/rpc/testing/http_get.h"
#include "examples/training_job.h"
#include "gtest/gtest.h"
#include "testing/eventually.h"

namespace overseer {
namespace {

using examples::TrainingJob;
using examples::TrainingJobOptions;

constexpr char kPromtool[] = "/usr/bin/promtool";
constexpr absl::Duration kWait = absl::Minutes(5);

// The body of GET /metrics on 127.0.0.1:`port` ("" if it cannot be read).
std::string Page(int port) {
  absl::StatusOr<std::string> response = test::HttpGet(port, "/metrics");
  if (!response.ok()) return "";
  const size_t body = response->find("\r\n\r\n");
  return body == std::string::npos ? "" : response->substr(body + 4);
}

// `promtool check metrics` of `page` (on its stdin): its exit code and its output.
std::pair<int, std::string> Promtool(const std::string& page) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/page.", ::getpid(), ".txt");
  {
    std::ofstream out(path, std::ios::trunc);
    out << page;
  }
  const std::string command = absl::StrCat(kPromtool, " check metrics < ", path, " 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "cannot run " + command};
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// The samples of a page: "name{labels}" -> value.
std::map<std::string, double> Samples(const std::string& page) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    if (space == absl::string_view::npos || !absl::SimpleAtod(line.substr(space + 1), &value)) {
      continue;
    }
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

// The sum of the samples of `page` whose series starts with `prefix`.
double Sum(const std::string& page, const std::string& prefix) {
  double sum = 0;
  for (const auto& [series, value] : Samples(page)) {
    if (absl::StartsWith(series, prefix)) sum += value;
  }
  return sum;
}

// The families (# TYPE lines) of a page.
std::vector<std::string> Families(const std::string& page) {
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::ConsumePrefix(&line, "# TYPE ")) {
      names.emplace_back(line.substr(0, line.find(' ')));
    }
  }
  return names;
}

const std::vector<std::string> kProcess = {"process_cpu_seconds_total",
                                           "process_resident_memory_bytes",
                                           "process_virtual_memory_bytes",
                                           "process_open_fds",
                                           "process_max_fds",
                                           "process_start_time_seconds",
                                           "overseer_build_info"};
const std::vector<std::string> kServer = {"overseer_server_serving"};

// What docs/metrics.md lists for each component (besides kProcess, and kServer for
// the servers).
const std::map<std::string, std::vector<std::string>> kComponents = {
    {"master",
     {"overseer_master_steps_total", "overseer_master_step_latency_seconds",
      "overseer_master_sessions_open", "overseer_master_sessions_created_total",
      "overseer_master_sessions_collected_total", "overseer_master_rpc_latency_seconds",
      "overseer_master_rpc_errors_total", "overseer_master_readiness_marks_total",
      "overseer_master_readiness_withdrawals_total", "overseer_master_readiness_waiters",
      "overseer_master_snapshot_wait_seconds", "overseer_master_snapshot_timeouts_total"}},
    {"worker",
     {"overseer_worker_rungraph_total", "overseer_worker_recv_tensor_total",
      "overseer_worker_recv_tensor_waiting", "overseer_worker_recv_tensor_bytes_total",
      "overseer_worker_resource_bytes", "overseer_worker_rpc_latency_seconds",
      "overseer_worker_rpc_errors_total"}},
    {"checkpoint_store",
     {"overseer_checkpoint_store_checkpoints_committed_total",
      "overseer_checkpoint_store_bytes_written_total", "overseer_checkpoint_store_bytes_read_total",
      "overseer_checkpoint_store_crc_failures_total",
      "overseer_checkpoint_store_save_duration_seconds",
      "overseer_checkpoint_store_restore_duration_seconds",
      "overseer_checkpoint_store_latest_checkpoint_step",
      "overseer_checkpoint_store_latest_checkpoint_timestamp_seconds",
      "overseer_checkpoint_store_local_reads_total",
      "overseer_checkpoint_store_local_read_bytes_total",
      "overseer_checkpoint_store_local_read_tokens_refused_total",
      "overseer_checkpoint_store_local_writes_total",
      "overseer_checkpoint_store_rpc_latency_seconds",
      "overseer_checkpoint_store_rpc_errors_total"}},
    {"summary_writer",
     {"overseer_event_writer_events_written_total", "overseer_event_writer_bytes_written_total",
      "overseer_event_writer_flush_duration_seconds", "overseer_event_writer_files_open",
      "overseer_event_writer_idle_closed_total", "overseer_event_writer_rpc_latency_seconds",
      "overseer_event_writer_rpc_errors_total"}},
    {"trainer",
     {"overseer_trainer_steps_total", "overseer_trainer_global_step",
      "overseer_trainer_recoveries_total", "overseer_trainer_readiness_wait_seconds",
      "overseer_trainer_waiting_for_ready"}},
};

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::access(kPromtool, X_OK), 0)
        << kPromtool << " is missing: install Debian's prometheus package (./dev does)";
    TrainingJobOptions options;
    options.cluster.num_ps = 1;
    options.cluster.num_workers = 2;  // A chief and a non-chief trainer.
    options.cluster.metrics = true;
    options.cluster.log_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/metrics");
    options.cluster.worker_flags = {"--exit_when_job_done"};
    options.run = "metrics";
    options.last_step = 0;  // Until StopAtStep, after the ps restart.
    options.save_checkpoint_steps = 20;
    options.log_every = 1;
    auto job = TrainingJob::Start(options);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
  }

  // Every page, as component -> (name, page): the servers', then the trainers'.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> Pages() {
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> pages;
    const std::map<std::string, std::string> components = {{"ps", "worker"},
                                                           {"worker", "worker"},
                                                           {"master", "master"},
                                                           {"store", "checkpoint_store"},
                                                           {"writer", "summary_writer"}};
    for (const auto& [job, index] : job_->cluster().servers()) {
      const int port = job_->cluster().metrics_port(job, index);
      EXPECT_GT(port, 0) << job << ":" << index;
      pages.push_back({components.at(job), {absl::StrCat(job, ":", index), Page(port)}});
    }
    for (int t = 0; t < job_->num_trainers(); ++t) {
      absl::StatusOr<int> port = job_->TrainerMetricsPort(t);
      EXPECT_TRUE(port.ok()) << port.status();
      pages.push_back({"trainer", {absl::StrCat("trainer:", t), port.ok() ? Page(*port) : ""}});
    }
    return pages;
  }

  // The page of server job:index, or of trainer `index` for job "trainer".
  std::string PageOf(const std::string& job, int index) {
    if (job == "trainer") {
      absl::StatusOr<int> port = job_->TrainerMetricsPort(index);
      return port.ok() ? Page(*port) : "";
    }
    return Page(job_->cluster().metrics_port(job, index));
  }

  void AwaitStep(int64_t step) {
    const absl::Status s = job_->Await([&] { return job_->CurrentStep() >= step; }, kWait,
                                       absl::StrCat("global step ", step));
    ASSERT_TRUE(s.ok()) << s;
  }

  std::unique_ptr<TrainingJob> job_;
};

TEST_F(MetricsTest, EveryPagePassesPromtoolAndSaysWhatHappened) {
  ASSERT_NO_FATAL_FAILURE(AwaitStep(60));

  // During training: every page is valid for Prometheus and has its families.
  for (const auto& [component, named] : Pages()) {
    const auto& [name, page] = named;
    SCOPED_TRACE(name);
    ASSERT_FALSE(page.empty());
    const auto [code, output] = Promtool(page);
    EXPECT_EQ(code, 0) << output << "\n" << page;
    EXPECT_EQ(output, "") << page;
    const std::vector<std::string> families = Families(page);
    std::vector<std::string> expected = kProcess;
    if (component != "trainer") expected.insert(expected.end(), kServer.begin(), kServer.end());
    expected.insert(expected.end(), kComponents.at(component).begin(),
                    kComponents.at(component).end());
    for (const std::string& family : expected) {
      EXPECT_NE(std::find(families.begin(), families.end(), family), families.end()) << family;
    }
    EXPECT_TRUE(absl::StrContains(
        page, absl::StrCat("overseer_build_info{component=\"", component, "\",version=\"")));
    if (component != "trainer") {
      EXPECT_TRUE(absl::StrContains(page, "overseer_server_serving 1\n"));
    }
  }

  // The values say that training ran through every component.
  const std::string master = PageOf("master", 0);
  EXPECT_GT(Sum(master, "overseer_master_rpc_latency_seconds_count{method=\"RunStep\"}") +
                Sum(master, "overseer_master_rpc_latency_seconds_count{method=\"RunCallable\"}"),
            0)
      << master;
  // Each trainer holds a session.
  EXPECT_GE(Sum(master, "overseer_master_rpc_latency_seconds_count{method=\"CreateSession\"}"), 2)
      << master;
  EXPECT_GE(Sum(master, "overseer_master_sessions_open"), 2) << master;
  // The chief saved when its session began (before step 60): one snapshot at least,
  // none timed out.
  EXPECT_GE(Sum(master, "overseer_master_snapshot_wait_seconds_count"), 1) << master;
  EXPECT_EQ(Sum(master, "overseer_master_snapshot_timeouts_total"), 0) << master;
  EXPECT_GT(
      Sum(PageOf("worker", 0), "overseer_worker_rpc_latency_seconds_count{method=\"RunGraph\"}"),
      0);
  // The workers pull the variables from the ps.
  EXPECT_GT(
      Sum(PageOf("ps", 0), "overseer_worker_rpc_latency_seconds_count{method=\"RecvTensor\"}"), 0);
  const std::string store = PageOf("store", 0);
  EXPECT_GE(Sum(store, "overseer_checkpoint_store_latest_checkpoint_step{run=\"metrics\"}"), 0)
      << store;
  EXPECT_GT(Sum(store,
                "overseer_checkpoint_store_latest_checkpoint_timestamp_seconds{"
                "run=\"metrics\"}"),
            1.5e9)
      << store;
  EXPECT_GE(Sum(PageOf("writer", 0), "overseer_event_writer_files_open"), 1);
  const std::string chief = PageOf("trainer", 0);
  const std::string non_chief = PageOf("trainer", 1);
  EXPECT_GT(Sum(chief, "overseer_trainer_steps_total"), 0) << chief;
  EXPECT_GT(Sum(non_chief, "overseer_trainer_steps_total"), 0) << non_chief;
  EXPECT_GE(Sum(chief, "overseer_trainer_last_checkpoint_step"), 0) << chief;
  EXPECT_GE(Sum(non_chief, "overseer_trainer_readiness_wait_seconds_count"), 1) << non_chief;
  EXPECT_EQ(Sum(non_chief, "overseer_trainer_waiting_for_ready"), 0) << non_chief;

  // A ps restart: the trainers recover, the master counts the failed steps by method
  // and code.
  const int64_t before = job_->CurrentStep();
  ASSERT_TRUE(job_->cluster().Stop("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(job_->cluster().Restart("ps", 0).ok());
  ASSERT_NO_FATAL_FAILURE(AwaitStep(before + 40));
  for (int t = 0; t < job_->num_trainers(); ++t) {
    EXPECT_TRUE(test::Eventually(
        [&] { return Sum(PageOf("trainer", t), "overseer_trainer_recoveries_total") >= 1; }, kWait))
        << PageOf("trainer", t);
  }
  const std::string after = PageOf("master", 0);
  EXPECT_GE(Sum(after, "overseer_master_rpc_errors_total{"), 1) << after;
  // The restarted ps serves a fresh page that promtool accepts too.
  const auto [code, output] = Promtool(PageOf("ps", 0));
  EXPECT_EQ(code, 0) << output;

  ASSERT_TRUE(job_->StopAtStep(job_->CurrentStep() + 20).ok());
  const absl::Status done = job_->WaitForTrainers(kWait);
  EXPECT_TRUE(done.ok()) << done;
  // The chief's summaries reached the writer (streamed in batches, flushed at its end).
  const std::string writer = PageOf("writer", 0);
  EXPECT_GT(Sum(writer, "overseer_event_writer_events_written_total"), 0) << writer;
  EXPECT_GE(Sum(writer, "overseer_event_writer_flush_duration_seconds_count"), 1) << writer;
  const auto [writer_code, writer_output] = Promtool(writer);
  EXPECT_EQ(writer_code, 0) << writer_output;
}

}  // namespace
}  // namespace overseer
