#ifndef OVERSEER_CORE_KERNELS_SUMMARY_HISTOGRAM_H_
#define OVERSEER_CORE_KERNELS_SUMMARY_HISTOGRAM_H_

// The histogram of HistogramSummary, with TensorFlow's default bucket edges so that
// TensorBoard shows the same buckets as for a TensorFlow trainer (FORMATS.md 3.2).

#include <vector>

#include "proto/summary.pb.h"

namespace overseer {

// TensorFlow's default bucket limits: -DBL_MAX, the negated edges in increasing order,
// 0, then edges 1e-12 * 1.1^k below 1e20, then DBL_MAX. Bucket i counts values in
// [limit[i-1], limit[i]) (each value goes to the first limit greater than it, as
// TensorFlow assigns them).
const std::vector<double>& DefaultHistogramBucketLimits();

// Accumulates values. Not thread-safe.
class Histogram {
 public:
  Histogram();  // Default bucket limits.

  void Add(double value);

  // min, max, num, sum, sum_squares, and the buckets with each run of empty buckets
  // collapsed into its last one (as TensorFlow's EncodeToProto without zero buckets).
  void EncodeToProto(HistogramProto* proto) const;

 private:
  const std::vector<double>& limits_;
  std::vector<double> counts_;
  double min_;
  double max_;
  double num_ = 0;
  double sum_ = 0;
  double sum_squares_ = 0;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_SUMMARY_HISTOGRAM_H_
