#ifndef OVERSEER_CHECKPOINT_STORE_TESTING_TENSOR_HEADERS_H_
#define OVERSEER_CHECKPOINT_STORE_TESTING_TENSOR_HEADERS_H_

// Tensor headers for the checkpoint store's tests.

#include <cstdint>
#include <string>

#include "core/types.h"
#include "proto/checkpoint_store.pb.h"

namespace overseer {
namespace test {

// The header of a one-dimensional DT_FLOAT tensor of `floats` elements.
inline TensorHeader FloatHeader(const std::string& name, int64_t floats) {
  TensorHeader header;
  header.set_name(name);
  header.set_dtype(DT_FLOAT);
  header.mutable_shape()->add_dim()->set_size(floats);
  header.set_size(floats * 4);
  return header;
}

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_TESTING_TENSOR_HEADERS_H_
