#include "core/kernels/summary/histogram.h"

#include <algorithm>
#include <cfloat>

namespace overseer {

const std::vector<double>& DefaultHistogramBucketLimits() {
  static const std::vector<double>* const limits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
    positive.push_back(DBL_MAX);
    auto* all = new std::vector<double>;
    all->reserve(2 * positive.size() + 1);
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all->push_back(-*it);
    all->push_back(0.0);
    all->insert(all->end(), positive.begin(), positive.end());
    return all;
  }();
  return *limits;
}

Histogram::Histogram()
    : limits_(DefaultHistogramBucketLimits()),
      counts_(limits_.size(), 0.0),
      min_(limits_.back()),
      max_(-DBL_MAX) {}

void Histogram::Add(double value) {
  size_t b = std::upper_bound(limits_.begin(), limits_.end(), value) - limits_.begin();
  if (b == limits_.size()) b = limits_.size() - 1;  // value == DBL_MAX.
  counts_[b] += 1.0;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  num_ += 1;
  sum_ += value;
  sum_squares_ += value * value;
}

void Histogram::EncodeToProto(HistogramProto* proto) const {
  proto->Clear();
  proto->set_min(min_);
  proto->set_max(max_);
  proto->set_num(num_);
  proto->set_sum(sum_);
  proto->set_sum_squares(sum_squares_);
  size_t i = 0;
  while (i < counts_.size()) {
    double limit = limits_[i];
    double count = counts_[i];
    ++i;
    if (count <= 0.0) {
      while (i < counts_.size() && counts_[i] <= 0.0) {
        limit = limits_[i];
        count = counts_[i];
        ++i;
      }
    }
    proto->add_bucket_limit(limit);
    proto->add_bucket(count);
  }
}

}  // namespace overseer
