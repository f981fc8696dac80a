#include "core/logging.h"

#include <sys/time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace overseer {
namespace {

std::atomic<int> g_min_severity{static_cast<int>(LogSeverity::kInfo)};

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash == nullptr ? path : slash + 1;
}

}  // namespace

void SetMinLogSeverity(LogSeverity severity) { g_min_severity.store(static_cast<int>(severity)); }

LogSeverity MinLogSeverity() {
  return static_cast<LogSeverity>(g_min_severity.load(std::memory_order_relaxed));
}

namespace internal {

LogMessage::LogMessage(const char* file, int line, LogSeverity severity)
    : file_(file), line_(line), severity_(severity) {}

LogMessage::~LogMessage() {
  static const char kLetters[] = {'I', 'W', 'E', 'F'};
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "%c%02d%02d %02d:%02d:%02d.%06ld %s:%d] ",
                kLetters[static_cast<int>(severity_)], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<long>(tv.tv_usec), Basename(file_), line_);
  std::string line = prefix + stream_.str() + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  if (severity_ == LogSeverity::kFatal) {
    std::fflush(stderr);
    std::abort();
  }
}

}  // namespace internal
}  // namespace overseer
