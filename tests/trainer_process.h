#ifndef OVERSEER_TESTS_TRAINER_PROCESS_H_
#define OVERSEER_TESTS_TRAINER_PROCESS_H_

// A tests/replicated_trainer process (a data dependency of the test) started at
// construction, its stdout and stderr in $TEST_TMPDIR/<name>.log, and what it printed
// ("<key>: <value>" lines) read back. The destructor SIGKILLs it if it still runs.
// Not thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "testing/child_process.h"

namespace overseer {
namespace test {

class TrainerProcess {
 public:
  // Starts the trainer with `args`; a start failure shows in Wait() and Log().
  TrainerProcess(const std::string& name, std::vector<std::string> args);

  // Waits for the exit (at most 10 minutes, far beyond any test's trainer); its exit
  // code, -1 if a signal killed it or it did not start, -3 if it did not exit.
  int Wait();

  // Everything the trainer printed so far (and why it did not start, if it did not).
  std::string Log() const;

  // The value of the first line "<key>: <value>" of the log, or "".
  std::string Text(const std::string& key) const;
  // That value as a number, or -1.
  double Value(const std::string& key) const;

 private:
  std::unique_ptr<ChildProcess> process_;
  std::string start_error_;
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_TESTS_TRAINER_PROCESS_H_
