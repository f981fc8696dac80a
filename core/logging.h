#ifndef OVERSEER_CORE_LOGGING_H_
#define OVERSEER_CORE_LOGGING_H_

// A small logging facade (Abseil 20220623 has no absl/log):
//   LOG(INFO) << "listening on " << address;
//   CHECK(ptr != nullptr) << "why";          // aborts on failure: programmer errors only
// Lines go to stderr as "I1129 08:30:00.123456 file.cc:42] message".

#include <sstream>
#include <string>

namespace overseer {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

// Lines below this severity are dropped. Thread-safe.
void SetMinLogSeverity(LogSeverity severity);
LogSeverity MinLogSeverity();

namespace internal {

class LogMessage {
 public:
  LogMessage(const char* file, int line, LogSeverity severity);
  ~LogMessage();  // Writes the line; aborts for kFatal.
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  LogSeverity severity_;
  std::ostringstream stream_;
};

// Swallows a stream expression so that a disabled LOG costs one branch.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace overseer

#define OVERSEER_LOG_SEVERITY_INFO ::overseer::LogSeverity::kInfo
#define OVERSEER_LOG_SEVERITY_WARNING ::overseer::LogSeverity::kWarning
#define OVERSEER_LOG_SEVERITY_ERROR ::overseer::LogSeverity::kError
#define OVERSEER_LOG_SEVERITY_FATAL ::overseer::LogSeverity::kFatal

#define LOG(severity)                                                                              \
  (OVERSEER_LOG_SEVERITY_##severity < ::overseer::MinLogSeverity())                                \
      ? (void)0                                                                                    \
      : ::overseer::internal::LogVoidify() &                                                       \
            ::overseer::internal::LogMessage(__FILE__, __LINE__, OVERSEER_LOG_SEVERITY_##severity) \
                .stream()

#define CHECK(condition)                                                                          \
  (condition)                                                                                     \
      ? (void)0                                                                                   \
      : ::overseer::internal::LogVoidify() &                                                      \
            ::overseer::internal::LogMessage(__FILE__, __LINE__, ::overseer::LogSeverity::kFatal) \
                    .stream()                                                                     \
                << "Check failed: " #condition " "

#endif  // OVERSEER_CORE_LOGGING_H_
