#ifndef OVERSEER_CORE_TENSOR_H_
#define OVERSEER_CORE_TENSOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/logging.h"
#include "core/tensor_shape.h"
#include "core/types.h"
#include "proto/tensor.pb.h"

// Eigen's Tensor module takes 2.5 s to parse, in every file that includes it; most files
// that include this one use no Eigen view. So the views' types are only declared here,
// as Eigen itself declares them (unsupported/Eigen/CXX11/src/Tensor/
// TensorForwardDeclarations.h), and a file that calls flat(), vec(), matrix(), tensor()
// or flat_inner_dims() includes core/tensor_eigen.h, which brings Eigen and checks that
// these declarations name Eigen's own types.
namespace Eigen {
template <typename T>
struct MakePointer;
template <typename Scalar_, int NumIndices_, int Options_, typename IndexType>
class Tensor;
template <typename PlainObjectType, int Options_, template <class> class MakePointer_>
class TensorMap;
}  // namespace Eigen

namespace overseer {

// Eigen's values of Eigen::RowMajor and Eigen::Aligned, and its Eigen::DenseIndex
// (checked in core/tensor_eigen.h).
inline constexpr int kEigenRowMajor = 1;
inline constexpr int kEigenAligned = 16;
using EigenIndex = std::ptrdiff_t;

// A reference-counted, 64-byte aligned block of elements of one dtype. Strings are
// constructed in place and destroyed with the buffer. Thread-safe to share; the
// elements themselves are not synchronised.
class TensorBuffer {
 public:
  // How a new buffer's numeric and bool elements start (strings always start empty):
  // zero, or unspecified for a writer of every byte (no pass over the memory).
  enum class Init { kZero, kNone };

  // The checked allocation, for sizes that a request decides: INVALID_ARGUMENT when
  // the byte size of `shape` overflows (or a dimension is negative), RESOURCE_EXHAUSTED
  // when it would take the process's live tensor bytes past the memory budget
  // (SetTensorMemoryBudget) or the system refuses the memory. Messages name the dtype,
  // the shape and the bytes.
  static absl::StatusOr<std::shared_ptr<TensorBuffer>> Create(DataType dtype,
                                                              const TensorShape& shape, Init init);

  // Unchecked, for sizes the program decides: CHECK-fails where Create returns
  // INVALID_ARGUMENT or the system refuses the memory; the budget is not consulted.
  TensorBuffer(DataType dtype, int64_t num_elements);  // zero / empty-string filled
  struct Uninitialized {};
  TensorBuffer(DataType dtype, int64_t num_elements, Uninitialized);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }

 private:
  // Takes `data` (AllocationSize(size_bytes) bytes, counted as live) and initialises it.
  TensorBuffer(DataType dtype, int64_t num_elements, size_t size_bytes, void* data, Init init);

  DataType dtype_;
  int64_t num_elements_;
  size_t size_bytes_;
  void* data_;
};

// The process's tensor memory budget: the most bytes that live tensor buffers may hold
// before a checked allocation (TensorBuffer::Create, Tensor::Allocate, every kernel
// output, every parsed or received tensor) fails with RESOURCE_EXHAUSTED instead of
// the process running out of memory. 0: no budget (overflow is still checked). Until a
// binary sets it (--tensor_memory_budget_bytes, core/process_settings.h), it is
// DefaultTensorMemoryBudget(). Thread-safe.
void SetTensorMemoryBudget(uint64_t bytes);
uint64_t TensorMemoryBudget();  // 0: none.
// Physical memory, or the container's memory limit (cgroup v2 memory.max, or v1) if
// lower.
uint64_t DefaultTensorMemoryBudget();
// Bytes held by live tensor buffers now (allocation sizes, so rounded up).
uint64_t LiveTensorBytes();

// The cache of freed large tensor buffers (1 MiB and up, by exact size): a step that
// allocates the same large tensors as the previous one gets that step's memory back
// instead of faulting in fresh pages (about 3 s per GiB on a virtualised host). It is
// process-wide and off (0 bytes) unless a binary's main() turns it on (the servers,
// trainers and benchmarks do: --tensor_buffer_cache_bytes, core/process_settings.h;
// docs/settings.md). Beyond `bytes` the largest cached buffers go back to the system;
// lowering the limit releases the excess at once. Thread-safe.
void SetTensorBufferCacheBytes(size_t bytes);

// The size the binaries use by default: an eighth of physical memory, at most 8 GiB.
size_t DefaultTensorBufferCacheBytes();

// An n-dimensional array of one dtype, row-major. Copying a Tensor is cheap and shares
// the buffer (like TensorFlow's); DeepCopy makes an independent one. Accessors view the
// elements through Eigen (core/tensor_eigen.h). Concurrent reads are safe; writes need
// external synchronisation (variables lock around them).
class Tensor {
 public:
  template <typename T, int N>
  using EigenTensor = Eigen::TensorMap<Eigen::Tensor<T, N, kEigenRowMajor, EigenIndex>,
                                       kEigenAligned, Eigen::MakePointer>;
  template <typename T, int N>
  using ConstEigenTensor = Eigen::TensorMap<Eigen::Tensor<const T, N, kEigenRowMajor, EigenIndex>,
                                            kEigenAligned, Eigen::MakePointer>;

  Tensor() = default;  // DT_INVALID, no buffer: !IsInitialized().
  // Allocates zero-filled (or empty strings). Precondition: IsSupportedDataType(dtype).
  Tensor(DataType dtype, const TensorShape& shape);

  // Allocates without writing the elements, which are unspecified until the caller
  // writes every one (e.g. a read from a file or socket straight into the tensor);
  // saves zero-filling memory that is overwritten at once. Precondition:
  // IsSupportedDataType(dtype) and dtype != DT_STRING.
  static Tensor Uninitialized(DataType dtype, const TensorShape& shape);

  // The constructor and Uninitialized, checked (TensorBuffer::Create's errors, and
  // INVALID_ARGUMENT for an unsupported dtype): for any size that a request decides.
  static absl::StatusOr<Tensor> Allocate(DataType dtype, const TensorShape& shape);
  static absl::StatusOr<Tensor> AllocateUninitialized(DataType dtype, const TensorShape& shape);

  // A scalar of T.
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeToEnum<T>::value, TensorShape());
    t.data<T>()[0] = std::move(value);
    return t;
  }
  // A tensor of `shape` holding `values` (row-major). Precondition: sizes match.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const TensorShape& shape) {
    Tensor t(DataTypeToEnum<T>::value, shape);
    CHECK(static_cast<int64_t>(values.size()) == t.NumElements())
        << values.size() << " values for shape " << shape.DebugString();
    T* out = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, TensorShape({static_cast<int64_t>(values.size())}));
  }

  bool IsInitialized() const { return buffer_ != nullptr; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int i) const { return shape_.dim_size(i); }
  int64_t NumElements() const { return num_elements_; }
  // Bytes of element storage (strings: sum of their lengths).
  size_t TotalBytes() const;

  // Raw elements. Precondition: DataTypeToEnum<T>::value == dtype().
  template <typename T>
  T* data() const {
    CHECK(DataTypeToEnum<T>::value == dtype_)
        << "tensor of " << DataTypeString(dtype_) << " accessed as "
        << DataTypeString(DataTypeToEnum<T>::value);
    return buffer_ ? static_cast<T*>(buffer_->data()) : nullptr;
  }

  template <typename T>
  EigenTensor<T, 1> flat() const {
    return EigenTensor<T, 1>(data<T>(), num_elements_);
  }
  template <typename T>
  EigenTensor<T, 1> vec() const {
    CHECK(dims() == 1) << "vec() of shape " << shape_.DebugString();
    return flat<T>();
  }
  template <typename T>
  EigenTensor<T, 2> matrix() const {
    CHECK(dims() == 2) << "matrix() of shape " << shape_.DebugString();
    return EigenTensor<T, 2>(data<T>(), shape_.dim_size(0), shape_.dim_size(1));
  }
  template <typename T>
  T& scalar() const {
    CHECK(num_elements_ == 1) << "scalar() of shape " << shape_.DebugString();
    return data<T>()[0];
  }
  // A rank-N view; dimensions are the shape's, padded with leading 1s.
  template <typename T, int N>
  EigenTensor<T, N> tensor() const {
    CHECK(dims() <= N) << "tensor<" << N << ">() of shape " << shape_.DebugString();
    std::array<EigenIndex, N> d;  // Eigen::array is std::array.
    for (int i = 0; i < N; ++i) d[i] = 1;
    for (int i = 0; i < dims(); ++i) d[N - dims() + i] = shape_.dim_size(i);
    return EigenTensor<T, N>(data<T>(), d);
  }
  // The same elements viewed as an [outer, inner] matrix where inner is the product of
  // the dimensions from `axis` on.
  template <typename T>
  EigenTensor<T, 2> flat_inner_dims(int axis) const;

  // Shares the buffer under a new shape with the same element count; false otherwise.
  bool CopyFrom(const Tensor& other, const TensorShape& shape);
  // A tensor sharing this buffer with `shape`. INVALID_ARGUMENT on an element-count
  // mismatch.
  absl::StatusOr<Tensor> Reshaped(const TensorShape& shape) const;
  // An independent copy of the elements.
  Tensor DeepCopy() const;
  // Whether no other Tensor shares this buffer (in-place updates are then invisible to
  // other holders). When it is true, everything the other holders did with the buffer
  // before they let it go happened before the caller's writes: the copy's increment
  // reads their release of it (use_count() alone is a relaxed load, which orders
  // nothing).
  bool RefCountIsOne() const {
    if (buffer_ == nullptr) return true;
    const std::shared_ptr<TensorBuffer> probe = buffer_;
    return probe.use_count() <= 2;
  }
  // Whether both share one buffer.
  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }

  // Parses tensor_content or the typed *_val fields (a single value fills the shape,
  // as TensorFlow does). INVALID_ARGUMENT on unsupported dtypes, a bad shape or a
  // content size that does not match the shape; the allocation is checked (Allocate).
  static absl::StatusOr<Tensor> FromProto(const TensorProto& proto);
  // Numeric tensors use tensor_content unless `use_typed_fields`; strings use
  // string_val.
  void ToProto(TensorProto* proto, bool use_typed_fields = false) const;

  // "Tensor<float, [2,2]>: 1 2 3 4" with at most `max_entries` values.
  std::string DebugString(int max_entries = 10) const;
  // Element-wise equality of dtype, shape and values.
  bool Equals(const Tensor& other) const;

 private:
  static absl::StatusOr<Tensor> AllocateChecked(DataType dtype, const TensorShape& shape,
                                                TensorBuffer::Init init);

  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  int64_t num_elements_ = 1;
  std::shared_ptr<TensorBuffer> buffer_;
};

template <typename T>
Tensor::EigenTensor<T, 2> Tensor::flat_inner_dims(int axis) const {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < dims(); ++i) (i < axis ? outer : inner) *= shape_.dim_size(i);
  return EigenTensor<T, 2>(data<T>(), outer, inner);
}

}  // namespace overseer

#endif  // OVERSEER_CORE_TENSOR_H_
