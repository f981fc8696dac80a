#include "examples/trainer_output.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace overseer {
namespace examples {

std::string FormatSessionLine(int64_t session, int64_t global_step, int64_t recoveries,
                              double time) {
  return absl::StrFormat("session %d global_step %d recoveries %d time %.6f", session, global_step,
                         recoveries, time);
}

std::string FormatStepLine(int64_t global_step, double loss, int64_t recoveries, double time) {
  return absl::StrFormat("step %d loss %.4f recoveries %d time %.6f", global_step, loss, recoveries,
                         time);
}

std::string FormatFinalLine(double accuracy) {
  return absl::StrFormat("final accuracy: %.4f", accuracy);
}

TrainerLine ParseTrainerLine(absl::string_view line) {
  TrainerLine parsed;
  const std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.size() == 3 && words[0] == "final" && words[1] == "accuracy:") {
    if (absl::SimpleAtod(words[2], &parsed.accuracy)) parsed.kind = TrainerLine::kFinal;
    return parsed;
  }
  if (words.size() == 8 && words[0] == "session" && words[2] == "global_step" &&
      words[4] == "recoveries" && words[6] == "time" &&
      absl::SimpleAtoi(words[1], &parsed.session) &&
      absl::SimpleAtoi(words[3], &parsed.global_step) &&
      absl::SimpleAtoi(words[5], &parsed.recoveries) && absl::SimpleAtod(words[7], &parsed.time)) {
    parsed.kind = TrainerLine::kSession;
    return parsed;
  }
  if (words.size() == 8 && words[0] == "step" && words[2] == "loss" && words[4] == "recoveries" &&
      words[6] == "time" && absl::SimpleAtoi(words[1], &parsed.global_step) &&
      absl::SimpleAtod(words[3], &parsed.loss) && absl::SimpleAtoi(words[5], &parsed.recoveries) &&
      absl::SimpleAtod(words[7], &parsed.time)) {
    parsed.kind = TrainerLine::kStep;
    return parsed;
  }
  return TrainerLine();
}

double WallSeconds() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

}  // namespace examples
}  // namespace overseer
