#include "client/training/recoverable_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

absl::StatusOr<std::unique_ptr<RecoverableSession>> RecoverableSession::Create(
    WrappedSessionFactory factory, const RecoveryOptions& options, Clock* clock,
    RecoveryObserver on_recovery) {
  if (!factory) return absl::InvalidArgumentError("RecoverableSession: no session factory");
  if (clock == nullptr) return absl::InvalidArgumentError("RecoverableSession: null clock");
  if (options.initial_backoff < absl::ZeroDuration() ||
      options.max_backoff < options.initial_backoff || options.max_attempts < 0 ||
      options.max_recovery_time < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RecoverableSession: invalid recovery options (initial_backoff ",
        absl::FormatDuration(options.initial_backoff), ", max_backoff ",
        absl::FormatDuration(options.max_backoff), ", max_attempts ", options.max_attempts,
        ", max_recovery_time ", absl::FormatDuration(options.max_recovery_time), ")"));
  }
  std::unique_ptr<RecoverableSession> session(
      new RecoverableSession(std::move(factory), options, clock, std::move(on_recovery)));
  Series series;
  RETURN_IF_ERROR(session->CreateSession(&series));
  return session;
}

RecoverableSession::RecoverableSession(WrappedSessionFactory factory,
                                       const RecoveryOptions& options, Clock* clock,
                                       RecoveryObserver on_recovery)
    : factory_(std::move(factory)),
      options_(options),
      clock_(clock),
      on_recovery_(std::move(on_recovery)) {}

RecoverableSession::~RecoverableSession() {
  absl::Status s = Close();
  if (!s.ok()) LOG(WARNING) << "Closing a recoverable session on destruction: " << s;
}

int RecoverableSession::recoveries() const {
  absl::MutexLock lock(&mu_);
  return recoveries_;
}

absl::Status RecoverableSession::last_recovery_cause() const {
  absl::MutexLock lock(&mu_);
  return last_cause_;
}

absl::Status RecoverableSession::CreateSession(Series* series) {
  while (true) {
    absl::StatusOr<std::unique_ptr<WrappedSession>> created = factory_();
    if (created.ok()) {
      session_ = std::move(*created);
      if (graph_ == nullptr) graph_ = session_->graph();
      return absl::OkStatus();
    }
    if (!IsRecoverableError(created.status())) return created.status();
    RETURN_IF_ERROR(Recover(created.status(), "while creating the session", series));
  }
}

absl::Status RecoverableSession::Recover(const absl::Status& cause, const char* where,
                                         Series* series) {
  const absl::Time now = clock_->Now();
  if (series->attempts == 0) series->start = now;
  const absl::Duration elapsed = now - series->start;
  if (session_ != nullptr) {
    absl::Status closed = session_->Close();
    if (!closed.ok()) LOG(WARNING) << "Closing the failed session: " << closed;
    session_.reset();
  }
  const bool out_of_attempts =
      options_.max_attempts > 0 && series->attempts >= options_.max_attempts;
  if (out_of_attempts || elapsed >= options_.max_recovery_time) {
    const std::string limit =
        out_of_attempts
            ? absl::StrCat("max_attempts ", options_.max_attempts)
            : absl::StrCat("max_recovery_time ", absl::FormatDuration(options_.max_recovery_time));
    const std::string message = absl::StrCat(
        "recovery gave up after ", series->attempts, " recreations over ",
        absl::FormatDuration(elapsed), " (", limit, "); last error ", where, ": ", cause.message());
    LOG(ERROR) << message;
    return absl::Status(cause.code(), message);
  }
  ++series->attempts;
  int count;
  {
    absl::MutexLock lock(&mu_);
    count = ++recoveries_;
    last_cause_ = cause;
  }
  if (on_recovery_) on_recovery_(cause);
  absl::Duration backoff = options_.initial_backoff;
  for (int i = 1; i < series->attempts && backoff < options_.max_backoff; ++i) backoff *= 2;
  backoff = std::min({backoff, options_.max_backoff, options_.max_recovery_time - elapsed});
  LOG(WARNING) << "Recovery " << count << ": " << absl::StatusCodeToString(cause.code()) << " "
               << where << " (" << cause.message()
               << "); a task may have restarted or be unreachable. Closing the session and "
               << "creating a new one in " << absl::FormatDuration(backoff) << " (attempt "
               << series->attempts << " of this series)";
  clock_->SleepFor(backoff);
  return absl::OkStatus();
}

absl::Status RecoverableSession::RunStep(
    const std::function<absl::Status(WrappedSession& session)>& step) {
  if (closed_) return absl::FailedPreconditionError("Run on a closed session");
  if (!failed_.ok()) return failed_;
  Series series;
  while (true) {
    if (session_ == nullptr) {
      absl::Status created = CreateSession(&series);
      if (!created.ok()) {
        failed_ = created;
        return created;
      }
    }
    absl::Status s = step(*session_);
    if (!IsRecoverableError(s)) return s;
    absl::Status recovered = Recover(s, "while running a step", &series);
    if (!recovered.ok()) {
      failed_ = recovered;
      return recovered;
    }
  }
}

absl::Status RecoverableSession::Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                                     const std::vector<Output>& fetches,
                                     const std::vector<Operation>& targets,
                                     std::vector<Tensor>* outputs, RunMetadata* metadata) {
  return RunStep([&](WrappedSession& session) {
    return session.Run(options, feeds, fetches, targets, outputs, metadata);
  });
}

absl::StatusOr<bool> RecoverableSession::ShouldStop() {
  if (closed_ || !failed_.ok() || session_ == nullptr) return true;
  absl::StatusOr<bool> stop = session_->ShouldStop();
  if (stop.ok()) return *stop;
  if (!IsRecoverableError(stop.status())) {
    LOG(INFO) << "Stopping: " << stop.status();
    return true;
  }
  Series series;
  absl::Status recovered = Recover(stop.status(), "while checking for stop", &series);
  if (recovered.ok()) recovered = CreateSession(&series);
  if (!recovered.ok()) {
    failed_ = recovered;
    return true;
  }
  return false;  // A new session: training goes on.
}

absl::Status RecoverableSession::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  absl::Status s;
  if (session_ != nullptr) {
    s = session_->Close();
    session_.reset();
  }
  if (IsRecoverableError(s)) {
    LOG(WARNING) << "An error occurred when closing the session (a task may have restarted "
                 << "or be unreachable): " << s;
    s = absl::OkStatus();
  }
  // A recovery that failed while checking for stop ended training: say why.
  return s.ok() ? failed_ : s;
}

}  // namespace overseer
