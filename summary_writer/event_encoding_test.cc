#include "summary_writer/event_encoding.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/event.pb.h"

namespace overseer {
namespace {

std::vector<Summary> Summaries() {
  std::vector<Summary> summaries(1);  // Empty: Event.summary is still present.
  Summary scalar;
  Summary::Value* v = scalar.add_value();
  v->set_tag("loss");
  v->set_simple_value(0.25f);
  summaries.push_back(scalar);
  Summary large;
  for (int i = 0; i < 40; ++i) {
    Summary::Value* value = large.add_value();
    value->set_tag("layer_" + std::to_string(i) + "/histogram_of_the_weights");
    value->mutable_histo()->set_num(i);
    for (int b = 0; b < 30; ++b) value->mutable_histo()->add_bucket(b * 0.5);
  }
  summaries.push_back(large);  // Longer than 127 bytes: a multi-byte length.
  return summaries;
}

TEST(EventEncodingTest, MatchesProtobufSerialization) {
  const std::vector<double> wall_times = {0.0, -0.0, 1700000000.123456, -1.5,
                                          std::numeric_limits<double>::infinity()};
  const std::vector<int64_t> steps = {
      0, 1, 127, 128, 1LL << 40, -1, std::numeric_limits<int64_t>::min()};
  for (const Summary& summary : Summaries()) {
    for (double wall_time : wall_times) {
      for (int64_t step : steps) {
        Event event;
        event.set_wall_time(wall_time);
        event.set_step(step);
        *event.mutable_summary() = summary;
        const std::string expected = event.SerializeAsString();

        std::string out = "prefix";
        AppendSummaryEvent(wall_time, step, summary, &out);
        EXPECT_EQ(out, "prefix" + expected) << wall_time << " " << step;

        std::string from_bytes = "prefix";
        AppendSerializedSummaryEvent(wall_time, step, summary.SerializeAsString(), &from_bytes);
        EXPECT_EQ(from_bytes, "prefix" + expected) << wall_time << " " << step;
      }
    }
  }
}

TEST(EventEncodingTest, ParsesBack) {
  Summary summary;
  summary.add_value()->set_tag("accuracy");
  std::string out;
  AppendSummaryEvent(12.5, 42, summary, &out);
  Event event;
  ASSERT_TRUE(event.ParseFromString(out));
  EXPECT_EQ(event.wall_time(), 12.5);
  EXPECT_EQ(event.step(), 42);
  ASSERT_TRUE(event.has_summary());
  EXPECT_EQ(event.summary().value(0).tag(), "accuracy");
}

}  // namespace
}  // namespace overseer
