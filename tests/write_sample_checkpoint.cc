// Writes a sample checkpoint "model.ckpt-7" (2 shards) into the directory given as
// argv[1] through the embedded CheckpointStore. Used by the out-of-language check
// (read_checkpoint.py), which knows exactly what to expect:
//   a/bias     float [5]     i * 0.5                        shard 0
//   b/weights  float [3, 4]  100 + i                        shard 1
//   c/step     int64 []      42                             shard 0
//   d/table    float [600, 1000]  (i % 1000) * 0.25        shard 1  (2.4 MB)

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "checkpoint_store/checkpoint_store.h"

namespace overseer {
namespace {

TensorHeader Header(const std::string& name, DataType dtype, std::vector<int64_t> dims,
                    int64_t element_bytes) {
  TensorHeader header;
  header.set_name(name);
  header.set_dtype(dtype);
  int64_t n = 1;
  for (int64_t d : dims) {
    header.mutable_shape()->add_dim()->set_size(d);
    n *= d;
  }
  header.set_size(n * element_bytes);
  return header;
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

absl::Status Write(const std::string& dir) {
  auto store = CheckpointStore::Open(FileSystem::Posix(), dir, Clock::Real());
  if (!store.ok()) return store.status();
  BeginCheckpointRequest begin;
  begin.set_name("model.ckpt-7");
  begin.set_num_shards(2);
  auto id = (*store)->BeginCheckpoint(begin);
  if (!id.ok()) return id.status();
  std::vector<float> bias, weights, table;
  for (int i = 0; i < 5; ++i) bias.push_back(i * 0.5f);
  for (int i = 0; i < 12; ++i) weights.push_back(100.0f + i);
  for (int i = 0; i < 600 * 1000; ++i) table.push_back((i % 1000) * 0.25f);
  const std::vector<int64_t> step = {42};
  for (int shard = 0; shard < 2; ++shard) {
    auto writer = (*store)->OpenShard(*id, shard);
    if (!writer.ok()) return writer.status();
    absl::Status s;
    if (shard == 0) {
      s = (*writer)->AddTensor(Header("a/bias", DT_FLOAT, {5}, 4), Bytes(bias));
      if (s.ok()) s = (*writer)->AddTensor(Header("c/step", DT_INT64, {}, 8), Bytes(step));
    } else {
      s = (*writer)->AddTensor(Header("b/weights", DT_FLOAT, {3, 4}, 4), Bytes(weights));
      if (s.ok()) {
        s = (*writer)->AddTensor(Header("d/table", DT_FLOAT, {600, 1000}, 4), Bytes(table));
      }
    }
    if (s.ok()) s = (*writer)->Close();
    if (!s.ok()) return s;
  }
  return (*store)->CommitCheckpoint(*id).status();
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_sample_checkpoint DIR\n";
    return 2;
  }
  const absl::Status s = overseer::Write(argv[1]);
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  return 0;
}
