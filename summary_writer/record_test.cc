#include "summary_writer/record.h"

#include <string>

#include "gtest/gtest.h"

namespace overseer {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

// FORMATS.md 1.3, from TensorBoard's tf_record.rs: a 24-byte Event holding
// wall_time and file_version "brain.Event:2".
std::string VersionEventBytes() {
  return Bytes({0x09, 0x00, 0x00, 0x80, 0x38, 0x99, 0xd6, 0xd7, 0x41, 0x1a, 0x0d}) +
         "brain.Event:2";
}

TEST(RecordTest, TensorBoardVector) {
  const std::string data = VersionEventBytes();
  ASSERT_EQ(data.size(), 24u);
  std::string framed;
  AppendRecord(data, &framed);
  ASSERT_EQ(framed.size(), 16u + 24u);
  EXPECT_EQ(framed.substr(0, 8), Bytes({0x18, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(framed.substr(8, 4), Bytes({0xa3, 0x7f, 0x4b, 0x22}));
  EXPECT_EQ(framed.substr(12, 24), data);
  EXPECT_EQ(framed.substr(36, 4), Bytes({0x12, 0x4b, 0x36, 0xab}));
}

TEST(RecordTest, RoundTripsSeveralRecords) {
  std::string file;
  const std::vector<std::string> records = {"", "a", std::string(1000, 'x'), "last"};
  for (const auto& r : records) AppendRecord(r, &file);
  RecordReader reader(file);
  std::string record;
  for (const auto& r : records) {
    ASSERT_TRUE(reader.ReadRecord(&record).ok());
    EXPECT_EQ(record, r);
  }
  EXPECT_TRUE(absl::IsOutOfRange(reader.ReadRecord(&record)));
  EXPECT_EQ(reader.offset(), file.size());

  // The borrowing form points into the buffer.
  RecordReader borrowing(file);
  size_t offset = 0;
  for (const auto& r : records) {
    absl::string_view view;
    ASSERT_TRUE(borrowing.ReadRecord(&view).ok());
    EXPECT_EQ(view, r);
    EXPECT_EQ(view.data(), file.data() + offset + kRecordHeaderSize);
    offset += kRecordHeaderSize + r.size() + kRecordFooterSize;
  }
  absl::string_view view;
  EXPECT_TRUE(absl::IsOutOfRange(borrowing.ReadRecord(&view)));
}

TEST(RecordTest, EveryTruncationIsDataLossAtTheTornRecord) {
  std::string file;
  AppendRecord("first", &file);
  const size_t first_size = file.size();
  AppendRecord("second record", &file);
  for (size_t cut = first_size + 1; cut < file.size(); ++cut) {
    RecordReader reader(absl::string_view(file).substr(0, cut));
    std::string record;
    ASSERT_TRUE(reader.ReadRecord(&record).ok());
    const absl::Status s = reader.ReadRecord(&record);
    EXPECT_TRUE(absl::IsDataLoss(s)) << cut << ": " << s;
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s;
    EXPECT_EQ(reader.offset(), first_size);
  }
}

TEST(RecordTest, EveryFlippedByteIsDetected) {
  std::string file;
  AppendRecord("payload of one record", &file);
  for (size_t i = 0; i < file.size(); ++i) {
    std::string bad = file;
    bad[i] ^= 0x20;
    RecordReader reader(bad);
    std::string record;
    const absl::Status s = reader.ReadRecord(&record);
    EXPECT_TRUE(absl::IsDataLoss(s)) << "byte " << i << ": " << s;
  }
}

TEST(RecordTest, CorruptLengthSaysCorrupted) {
  std::string file;
  AppendRecord("abc", &file);
  file[0] = 4;
  RecordReader reader(file);
  std::string record;
  const absl::Status s = reader.ReadRecord(&record);
  EXPECT_TRUE(absl::IsDataLoss(s));
  EXPECT_NE(s.message().find("length crc"), std::string::npos) << s;
}

}  // namespace
}  // namespace overseer

namespace overseer {
namespace {

TEST(RecordTest, FrameInPlaceEqualsAppendRecord) {
  std::string expected = "prefix";
  AppendRecord("some data", &expected);
  std::string buf = "prefix";
  buf.append(kRecordHeaderSize, '\0');
  buf.append("some data");
  FrameRecordInPlace(6, &buf);
  EXPECT_EQ(buf, expected);
}

}  // namespace
}  // namespace overseer
