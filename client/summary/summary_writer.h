#ifndef OVERSEER_CLIENT_SUMMARY_SUMMARY_WRITER_H_
#define OVERSEER_CLIENT_SUMMARY_SUMMARY_WRITER_H_

// SummaryWriter: TensorFlow's FileWriter. It writes TensorBoard event files either
// into a local directory (embedded) or through a summary_writer server, with the same
// API either way:
//
//   auto writer = SummaryWriter::Create("/tmp/logs/train");            // embedded
//   auto writer = SummaryWriter::Create("grpc://host:7070/exp1/train"); // remote run
//   writer->AddGraph(graph_def);
//   writer->AddSummary(outputs[0].scalar<std::string>(), step);  // a summary op's output
//   writer->Close();
//
// After a restart from a checkpoint at step S, create the writer with start_step = S
// (or call AddSessionLog(START, S)): a new file begins with SessionLog START at S, so
// TensorBoard drops what the earlier run wrote at steps >= S (FORMATS.md 5.3).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/clock.h"
#include "proto/event.pb.h"
#include "proto/graph.pb.h"
#include "proto/meta_graph.pb.h"
#include "proto/summary.pb.h"
#include "summary_writer/event_sink.h"

namespace overseer {

class PeriodicFlusher;

struct SummaryWriterOptions {
  // As TensorFlow's FileWriter: events are flushed (written and fsynced) every
  // flush_secs seconds, and written out every max_queue events.
  int flush_secs = 120;
  int max_queue = 10;
  std::string filename_suffix;
  // Resuming at this step: the file starts with SessionLog START at it.
  std::optional<int64_t> start_step;
  // Time source for wall_time and flush intervals. Not owned. Null means the real
  // clock (a trainer's main may make a writer directly; the library's own users pass
  // their clock).
  Clock* clock = nullptr;
  // Run a thread that flushes every flush_secs even when no events arrive.
  bool background_flush = true;
};

// Thread-safe.
class SummaryWriter {
 public:
  // `logdir` is a local directory (created if missing) or "grpc://host:port/<run>".
  // INVALID_ARGUMENT for a malformed address, bad run name or bad options; the file
  // system's or server's error otherwise.
  static absl::StatusOr<std::unique_ptr<SummaryWriter>> Create(
      const std::string& logdir, const SummaryWriterOptions& options = {});

  // Closes (errors are logged) unless Close was called.
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // Writes `summary` at `step` with the current wall time.
  absl::Status AddSummary(const Summary& summary, int64_t step);
  // The same for a serialized Summary, e.g. the output of a summary op.
  // INVALID_ARGUMENT if it does not parse.
  absl::Status AddSummary(const std::string& serialized_summary, int64_t step);
  // Writes Event.graph_def, which TensorBoard's graph view shows.
  absl::Status AddGraph(const GraphDef& graph, int64_t step = 0);
  // Writes Event.meta_graph_def (TensorFlow's add_meta_graph): TensorBoard shows its
  // graph with the collections and saver.
  absl::Status AddMetaGraph(const MetaGraphDef& meta_graph, int64_t step = 0);
  // Writes a SessionLog. START on a file that already holds summaries closes it and
  // opens a new one that begins with START at `step` (see the file comment).
  absl::Status AddSessionLog(SessionLog::SessionStatus status, int64_t step,
                             const std::string& checkpoint_path = "");
  // Writes `event` as given (a zero wall_time becomes the current time).
  absl::Status AddEvent(const Event& event);

  // Blocks until every event added so far is durable.
  absl::Status Flush();
  // Flush and close; later calls fail with FAILED_PRECONDITION.
  absl::Status Close();

 private:
  using SinkFactory =
      std::function<absl::StatusOr<std::unique_ptr<EventSink>>(std::optional<int64_t>)>;
  SummaryWriter(SinkFactory factory, std::unique_ptr<EventSink> sink,
                const SummaryWriterOptions& options);

  // Calls `write` on the current sink without taking mu_ (events cost a lock less;
  // the sinks are thread-safe). A sink refuses with FAILED_PRECONDITION once closed:
  // then, under mu_, the writer is closed too (FAILED_PRECONDITION) or a restart
  // replaced the sink, and `write` goes to the new one.
  template <typename WriteFn>
  absl::Status Write(const WriteFn& write, bool is_summary);
  void FlushIfDue();
  double Now() const;

  const SinkFactory factory_;
  const SummaryWriterOptions options_;
  // The sink events go to: sinks_.back(), replaced under mu_ by a restart. Sinks a
  // restart closed stay in sinks_ (a closed sink holds little), so that a write that
  // read the old pointer never finds it deleted.
  std::atomic<EventSink*> sink_{nullptr};
  // Whether the current file holds summaries (a START then begins a new file), and
  // whether events were added since the last flush. Set without mu_ by writes.
  std::atomic<bool> has_summaries_{false};
  std::atomic<bool> dirty_{false};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<EventSink>> sinks_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_flush_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<PeriodicFlusher> flusher_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SUMMARY_SUMMARY_WRITER_H_
