#include "core/message_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace overseer {
namespace {

// Shown for each of the largest tensors in an error.
constexpr size_t kNamedTensors = 3;

std::string Bytes(int64_t bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  if (bytes < kMiB) return absl::StrCat(bytes, " bytes");
  return absl::StrCat(bytes, " bytes (", absl::SixDigits(static_cast<double>(bytes) / kMiB),
                      " MiB)");
}

}  // namespace

int64_t EncodedTensorBytes(const Tensor& t) {
  if (!t.IsInitialized()) return 0;
  if (t.dtype() != DT_STRING) return static_cast<int64_t>(t.TotalBytes());
  // string_val: a tag byte and a length varint (at most 5 bytes below 4 GiB) each.
  return static_cast<int64_t>(t.TotalBytes()) + 6 * t.NumElements();
}

int64_t EncodedTensorBytes(const TensorProto& t) { return static_cast<int64_t>(t.ByteSizeLong()); }

MessageBudget::MessageBudget(std::string message, std::string hint, int64_t limit)
    : message_(std::move(message)), hint_(std::move(hint)), limit_(limit) {}

void MessageBudget::Add(std::string name, int64_t bytes) {
  total_ += bytes;
  tensors_.emplace_back(bytes, std::move(name));
}

absl::Status MessageBudget::Check() const {
  if (total_ <= limit_) return absl::OkStatus();
  std::vector<std::pair<int64_t, std::string>> largest = tensors_;
  std::stable_sort(largest.begin(), largest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> named;
  for (size_t i = 0; i < largest.size() && i < kNamedTensors; ++i) {
    named.push_back(absl::StrCat(largest[i].second, " is ", Bytes(largest[i].first)));
  }
  if (largest.size() > kNamedTensors) {
    named.push_back(absl::StrCat(largest.size() - kNamedTensors, " more"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      message_, " would carry ", Bytes(total_), " of tensors (", absl::StrJoin(named, ", "),
      "), over the limit of ", Bytes(limit_),
      " per message (protobuf cannot encode a message of 2 GiB or more); ", hint_));
}

}  // namespace overseer
