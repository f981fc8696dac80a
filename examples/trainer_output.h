#ifndef OVERSEER_EXAMPLES_TRAINER_OUTPUT_H_
#define OVERSEER_EXAMPLES_TRAINER_OUTPUT_H_

// The machine-readable lines cluster_trainer prints on stdout, one event per line, and
// their parser (used by cluster_demo, the chaos test and the recovery benchmark):
//
//   session 2 global_step 380 recoveries 1 time 1712345678.123456
//       a session was created (the first, or one more after a recovery) and the model
//       is ready at global_step; recoveries = sessions created - 1
//   step 412 loss 0.1834 recoveries 1 time 1712345679.012345
//       a training step succeeded; global_step as read in that step
//   final accuracy: 0.9812
//       the test accuracy at the end of training
//
// time is the wall clock (seconds since the Unix epoch) when the line was printed.
// Other lines (e.g. the data description) parse as kOther.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace overseer {
namespace examples {

struct TrainerLine {
  enum Kind { kOther, kSession, kStep, kFinal };
  Kind kind = kOther;
  int64_t session = 0;      // kSession: 1 for the first session.
  int64_t global_step = 0;  // kSession, kStep
  double loss = 0;          // kStep
  int64_t recoveries = 0;   // kSession, kStep
  double time = 0;          // kSession, kStep
  double accuracy = 0;      // kFinal
};

std::string FormatSessionLine(int64_t session, int64_t global_step, int64_t recoveries,
                              double time);
std::string FormatStepLine(int64_t global_step, double loss, int64_t recoveries, double time);
std::string FormatFinalLine(double accuracy);

// The event of one line (without its newline); kOther for anything else.
TrainerLine ParseTrainerLine(absl::string_view line);

// Seconds since the Unix epoch, with microseconds.
double WallSeconds();

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_TRAINER_OUTPUT_H_
