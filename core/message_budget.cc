#include "core/message_budget.h"

#include <algorithm>
#include <vector>

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

absl::Status MessageBudget::Error(absl::string_view message, absl::string_view hint,
                                  const std::function<std::string(size_t)>& name_of) const {
  std::vector<size_t> order(sizes_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [this](size_t a, size_t b) { return sizes_[a] > sizes_[b]; });
  std::vector<std::string> named;
  for (size_t i = 0; i < order.size() && i < kNamedTensors; ++i) {
    named.push_back(absl::StrCat(name_of(order[i]), " is ", Bytes(sizes_[order[i]])));
  }
  if (order.size() > kNamedTensors) {
    named.push_back(absl::StrCat(order.size() - kNamedTensors, " more"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(message, " would carry ", Bytes(total_), " of tensors (",
                   absl::StrJoin(named, ", "), "), over the limit of ", Bytes(limit_),
                   " per message (protobuf cannot encode a message of 2 GiB or more); ", hint));
}

}  // namespace overseer
