#include "core/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

constexpr size_t kAlignment = 64;

// Buffers from kLargeBytes up are whole 2 MiB huge pages, advised as such, and are
// recycled through LargeBuffers when freed, if the binary turned the cache on. Touching fresh
// memory costs a page fault per 4 KiB page (about 3 s per GiB on a virtualised host, 40 times the
// cost of writing the bytes), so a step that allocates the same large tensors as the previous one
// must get the previous step's memory back instead of new pages.
constexpr size_t kLargeBytes = size_t{1} << 20;
constexpr size_t kHugePage = size_t{2} << 20;

size_t AllocationSize(size_t size_bytes) {
  if (size_bytes >= kLargeBytes) return (size_bytes + kHugePage - 1) / kHugePage * kHugePage;
  return std::max(kAlignment, (size_bytes + kAlignment - 1) / kAlignment * kAlignment);
}

// The process-wide cache of freed large buffers, by exact allocation size (see
// SetTensorBufferCacheBytes). It holds at most limit_ bytes, 0 (off) until a binary sets
// it. Thread-safe.
class LargeBuffers {
 public:
  static LargeBuffers* Get() {
    static LargeBuffers* cache = new LargeBuffers();
    return cache;
  }

  void SetLimit(size_t limit) {
    limit_.store(limit, std::memory_order_relaxed);
    Trim(limit);
  }

  void* Allocate(size_t bytes) {
    {
      absl::MutexLock lock(&mu_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_bytes_ -= bytes;
        return p;
      }
    }
    void* p = HugePageAligned(bytes);
    if (p == nullptr) {  // Give the cache back and try once more.
      Trim(0);
      p = HugePageAligned(bytes);
    }
    if (p != nullptr) madvise(p, bytes, MADV_HUGEPAGE);  // Advice only; may be refused.
    return p;
  }

  // Memory aligned to a huge page, or null. Not aligned_alloc: that wants a size that
  // is a multiple of the alignment, and `bytes` seldom is.
  static void* HugePageAligned(size_t bytes) {
    void* p = nullptr;
    return posix_memalign(&p, kHugePage, bytes) == 0 ? p : nullptr;
  }

  void Free(void* p, size_t bytes) {
    const size_t limit = limit_.load(std::memory_order_relaxed);
    if (bytes > limit) {
      std::free(p);
      return;
    }
    Trim(limit - bytes);
    absl::MutexLock lock(&mu_);
    free_.emplace(bytes, p);
    cached_bytes_ += bytes;
  }

 private:
  LargeBuffers() = default;

  // Frees the largest cached buffers until at most `keep` bytes are cached.
  void Trim(size_t keep) {
    std::vector<void*> release;
    {
      absl::MutexLock lock(&mu_);
      while (cached_bytes_ > keep && !free_.empty()) {
        auto largest = std::prev(free_.end());
        cached_bytes_ -= largest->first;
        release.push_back(largest->second);
        free_.erase(largest);
      }
    }
    for (void* p : release) std::free(p);
  }

  std::atomic<size_t> limit_{0};
  absl::Mutex mu_;
  std::multimap<size_t, void*> free_ ABSL_GUARDED_BY(mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Element `i` of `t` as text, for DebugString.
std::string ElementString(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT:
      return absl::StrCat(t.data<float>()[i]);
    case DT_DOUBLE:
      return absl::StrCat(t.data<double>()[i]);
    case DT_INT32:
      return absl::StrCat(t.data<int32_t>()[i]);
    case DT_INT64:
      return absl::StrCat(t.data<int64_t>()[i]);
    case DT_BOOL:
      return t.data<bool>()[i] ? "true" : "false";
    case DT_STRING:
      return absl::StrCat("\"", t.data<std::string>()[i], "\"");
    default:
      return "?";
  }
}

template <typename T, typename Field>
void CopyTypedField(const Field& field, int64_t n, T* out) {
  if (field.size() == 0) return;  // zero-filled already
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<T>(i < field.size() ? field.Get(static_cast<int>(i))
                                             : field.Get(field.size() - 1));
  }
}

template <typename Field>
absl::Status CheckFieldSize(const Field& field, int64_t n, const TensorShape& shape) {
  // Fewer values than elements repeat the last one, as TensorFlow does.
  if (field.size() > n) {
    return absl::InvalidArgumentError(absl::StrCat("TensorProto has ", field.size(),
                                                   " values for shape ", shape.DebugString(), " (",
                                                   n, " elements)"));
  }
  return absl::OkStatus();
}

}  // namespace

void SetTensorBufferCacheBytes(size_t bytes) { LargeBuffers::Get()->SetLimit(bytes); }

namespace {

// The machine's physical memory in bytes; 0 if unknown.
uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
}

}  // namespace

size_t DefaultTensorBufferCacheBytes() {
  return std::min<uint64_t>(PhysicalMemoryBytes() / 8, uint64_t{8} << 30);
}

namespace {

// The largest tensor in bytes: far beyond any machine, and small enough that rounding
// up to whole huge pages cannot overflow.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 62;

constexpr uint64_t kBudgetUnset = ~uint64_t{0};
std::atomic<uint64_t> memory_budget{kBudgetUnset};
std::atomic<uint64_t> live_bytes{0};

size_t ElementSize(DataType dtype) {
  return dtype == DT_STRING ? sizeof(std::string) : DataTypeSize(dtype);
}

std::string Describe(DataType dtype, const TensorShape& shape) {
  return absl::StrCat("a ", DataTypeString(dtype), " tensor of shape ", shape.DebugString());
}

// Elements and bytes of a `dtype` tensor of `shape`, or INVALID_ARGUMENT.
absl::Status CheckedSize(DataType dtype, const TensorShape& shape, int64_t* elements,
                         size_t* bytes) {
  const uint64_t elem = ElementSize(dtype);
  bool empty = false;
  for (int i = 0; i < shape.dims(); ++i) {
    if (shape.dim_size(i) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(dtype, shape), " has a negative dimension"));
    }
    empty = empty || shape.dim_size(i) == 0;
  }
  uint64_t n = empty ? 0 : 1;
  for (int i = 0; i < shape.dims() && n > 0; ++i) {
    const uint64_t d = static_cast<uint64_t>(shape.dim_size(i));
    if (n > kMaxTensorBytes / elem / d) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(dtype, shape), " would need more than 2^62 bytes"));
    }
    n *= d;
  }
  *elements = static_cast<int64_t>(n);
  *bytes = static_cast<size_t>(n * elem);
  return absl::OkStatus();
}

std::string Bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30)) return absl::StrFormat("%.1f GiB", n / double(uint64_t{1} << 30));
  if (n >= (uint64_t{1} << 20)) return absl::StrFormat("%.1f MiB", n / double(uint64_t{1} << 20));
  return absl::StrCat(n, " bytes");
}

// Memory for `alloc` bytes (an AllocationSize), or null if the system refuses it.
void* RawAllocate(size_t alloc) {
  return alloc >= kLargeBytes ? LargeBuffers::Get()->Allocate(alloc)
                              : std::aligned_alloc(kAlignment, alloc);
}

uint64_t ReadLimit(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  unsigned long long v = 0;
  const bool read = std::fscanf(f, "%llu", &v) == 1;  // "max" reads nothing: no limit.
  std::fclose(f);
  return read ? v : 0;
}

}  // namespace

void SetTensorMemoryBudget(uint64_t bytes) {
  memory_budget.store(bytes, std::memory_order_relaxed);
}

uint64_t TensorMemoryBudget() {
  const uint64_t budget = memory_budget.load(std::memory_order_relaxed);
  if (budget != kBudgetUnset) return budget;
  static const uint64_t default_budget = DefaultTensorMemoryBudget();
  return default_budget;
}

uint64_t DefaultTensorMemoryBudget() {
  uint64_t budget = PhysicalMemoryBytes();
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const uint64_t limit = ReadLimit(path);
    if (limit > 0 && (budget == 0 || limit < budget)) budget = limit;
  }
  return budget;
}

uint64_t LiveTensorBytes() { return live_bytes.load(std::memory_order_relaxed); }

absl::StatusOr<std::shared_ptr<TensorBuffer>> TensorBuffer::Create(DataType dtype,
                                                                   const TensorShape& shape,
                                                                   Init init) {
  int64_t n = 0;
  size_t size_bytes = 0;
  RETURN_IF_ERROR(CheckedSize(dtype, shape, &n, &size_bytes));
  const size_t alloc = AllocationSize(size_bytes);
  const uint64_t budget = TensorMemoryBudget();
  const uint64_t in_use = live_bytes.fetch_add(alloc, std::memory_order_relaxed);
  if (budget > 0 && in_use + alloc > budget) {
    live_bytes.fetch_sub(alloc, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("allocating ", Bytes(alloc), " for ", Describe(dtype, shape),
                     " would exceed the process's tensor memory budget of ", Bytes(budget), " (",
                     Bytes(in_use), " in use; --tensor_memory_budget_bytes)"));
  }
  void* data = RawAllocate(alloc);
  if (data == nullptr) {
    live_bytes.fetch_sub(alloc, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory allocating ", Bytes(alloc), " for ", Describe(dtype, shape)));
  }
  return std::shared_ptr<TensorBuffer>(new TensorBuffer(dtype, n, size_bytes, data, init));
}

TensorBuffer::TensorBuffer(DataType dtype, int64_t num_elements, size_t size_bytes, void* data,
                           Init init)
    : dtype_(dtype), num_elements_(num_elements), size_bytes_(size_bytes), data_(data) {
  if (dtype == DT_STRING) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_elements; ++i) new (s + i) std::string();
  } else if (init == Init::kZero) {
    std::memset(data_, 0, size_bytes_);
  }
}

namespace {

// For the unchecked constructors: the memory, counted as live, or a CHECK failure.
void* MustAllocate(DataType dtype, int64_t num_elements, size_t* size_bytes) {
  const uint64_t elem = ElementSize(dtype);
  CHECK(num_elements >= 0 && static_cast<uint64_t>(num_elements) <= kMaxTensorBytes / elem)
      << "a buffer of " << num_elements << " " << DataTypeString(dtype)
      << " elements: negative, or more than 2^62 bytes";
  *size_bytes = static_cast<size_t>(num_elements) * elem;
  const size_t alloc = AllocationSize(*size_bytes);
  void* data = RawAllocate(alloc);
  CHECK(data != nullptr) << "out of memory allocating " << alloc << " bytes";
  live_bytes.fetch_add(alloc, std::memory_order_relaxed);
  return data;
}

}  // namespace

TensorBuffer::TensorBuffer(DataType dtype, int64_t num_elements)
    : dtype_(dtype), num_elements_(num_elements) {
  data_ = MustAllocate(dtype, num_elements, &size_bytes_);
  if (dtype == DT_STRING) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_elements; ++i) new (s + i) std::string();
  } else {
    std::memset(data_, 0, size_bytes_);
  }
}

TensorBuffer::TensorBuffer(DataType dtype, int64_t num_elements, Uninitialized)
    : dtype_(dtype), num_elements_(num_elements) {
  CHECK(dtype != DT_STRING) << "an uninitialised buffer of strings";
  data_ = MustAllocate(dtype, num_elements, &size_bytes_);
}

TensorBuffer::~TensorBuffer() {
  if (dtype_ == DT_STRING) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_elements_; ++i) s[i].~basic_string();
  }
  const size_t alloc = AllocationSize(size_bytes_);
  live_bytes.fetch_sub(alloc, std::memory_order_relaxed);
  if (alloc >= kLargeBytes) {
    LargeBuffers::Get()->Free(data_, alloc);
  } else {
    std::free(data_);
  }
}

Tensor::Tensor(DataType dtype, const TensorShape& shape)
    : dtype_(dtype), shape_(shape), num_elements_(shape.num_elements()) {
  CHECK(IsSupportedDataType(dtype)) << "unsupported dtype " << DataTypeString(dtype);
  buffer_ = std::make_shared<TensorBuffer>(dtype, num_elements_);
}

Tensor Tensor::Uninitialized(DataType dtype, const TensorShape& shape) {
  CHECK(IsSupportedDataType(dtype)) << "unsupported dtype " << DataTypeString(dtype);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = shape.num_elements();
  t.buffer_ = std::make_shared<TensorBuffer>(dtype, t.num_elements_, TensorBuffer::Uninitialized{});
  return t;
}

namespace {

absl::Status CheckDtype(DataType dtype) {
  if (IsSupportedDataType(dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported dtype ", DataTypeString(dtype),
                   "; supported: float, double, int32, int64, bool, string"));
}

}  // namespace

absl::StatusOr<Tensor> Tensor::AllocateChecked(DataType dtype, const TensorShape& shape,
                                               TensorBuffer::Init init) {
  RETURN_IF_ERROR(CheckDtype(dtype));
  Tensor t;
  ASSIGN_OR_RETURN(t.buffer_, TensorBuffer::Create(dtype, shape, init));
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = shape.num_elements();
  return t;
}

absl::StatusOr<Tensor> Tensor::Allocate(DataType dtype, const TensorShape& shape) {
  return AllocateChecked(dtype, shape, TensorBuffer::Init::kZero);
}

absl::StatusOr<Tensor> Tensor::AllocateUninitialized(DataType dtype, const TensorShape& shape) {
  return AllocateChecked(dtype, shape, TensorBuffer::Init::kNone);
}

size_t Tensor::TotalBytes() const {
  if (!IsInitialized()) return 0;
  if (dtype_ != DT_STRING) return buffer_->size_bytes();
  size_t total = 0;
  const std::string* s = data<std::string>();
  for (int64_t i = 0; i < num_elements_; ++i) total += s[i].size();
  return total;
}

bool Tensor::CopyFrom(const Tensor& other, const TensorShape& shape) {
  if (other.NumElements() != shape.num_elements()) return false;
  dtype_ = other.dtype_;
  shape_ = shape;
  num_elements_ = other.num_elements_;
  buffer_ = other.buffer_;
  return true;
}

absl::StatusOr<Tensor> Tensor::Reshaped(const TensorShape& shape) const {
  Tensor out;
  if (!out.CopyFrom(*this, shape)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reshape a tensor with ", num_elements_, " elements (shape ", shape_.DebugString(),
        ") to shape ", shape.DebugString(), " (", shape.num_elements(), " elements)"));
  }
  return out;
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return Tensor();
  Tensor out(dtype_, shape_);
  if (dtype_ == DT_STRING) {
    const std::string* src = data<std::string>();
    std::string* dst = out.data<std::string>();
    for (int64_t i = 0; i < num_elements_; ++i) dst[i] = src[i];
  } else {
    std::memcpy(out.buffer_->data(), buffer_->data(), buffer_->size_bytes());
  }
  return out;
}

absl::StatusOr<Tensor> Tensor::FromProto(const TensorProto& proto) {
  const DataType dtype = proto.dtype();
  if (!IsSupportedDataType(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TensorProto has unsupported dtype ", DataTypeString(dtype),
                     "; supported: float, double, int32, int64, bool, string"));
  }
  auto shape_or = TensorShape::FromProto(proto.tensor_shape());
  if (!shape_or.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TensorProto has a bad shape: ", shape_or.status().message()));
  }
  ASSIGN_OR_RETURN(Tensor t, Allocate(dtype, *shape_or));
  const int64_t n = t.NumElements();
  if (dtype != DT_STRING && !proto.tensor_content().empty()) {
    const size_t want = DataTypeSize(dtype) * static_cast<size_t>(n);
    if (proto.tensor_content().size() != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TensorProto tensor_content has ", proto.tensor_content().size(), " bytes but shape ",
          shape_or->DebugString(), " of ", DataTypeString(dtype), " needs ", want));
    }
    std::memcpy(t.buffer_->data(), proto.tensor_content().data(), want);
    return t;
  }
  switch (dtype) {
    case DT_FLOAT:
      if (auto s = CheckFieldSize(proto.float_val(), n, t.shape()); !s.ok()) return s;
      CopyTypedField(proto.float_val(), n, t.data<float>());
      break;
    case DT_DOUBLE:
      if (auto s = CheckFieldSize(proto.double_val(), n, t.shape()); !s.ok()) return s;
      CopyTypedField(proto.double_val(), n, t.data<double>());
      break;
    case DT_INT32:
      if (auto s = CheckFieldSize(proto.int_val(), n, t.shape()); !s.ok()) return s;
      CopyTypedField(proto.int_val(), n, t.data<int32_t>());
      break;
    case DT_INT64:
      if (auto s = CheckFieldSize(proto.int64_val(), n, t.shape()); !s.ok()) return s;
      CopyTypedField(proto.int64_val(), n, t.data<int64_t>());
      break;
    case DT_BOOL:
      if (auto s = CheckFieldSize(proto.bool_val(), n, t.shape()); !s.ok()) return s;
      CopyTypedField(proto.bool_val(), n, t.data<bool>());
      break;
    case DT_STRING: {
      if (auto s = CheckFieldSize(proto.string_val(), n, t.shape()); !s.ok()) return s;
      std::string* out = t.data<std::string>();
      const int size = proto.string_val_size();
      for (int64_t i = 0; i < n && size > 0; ++i) {
        out[i] = proto.string_val(i < size ? static_cast<int>(i) : size - 1);
      }
      break;
    }
    default:
      break;
  }
  return t;
}

void Tensor::ToProto(TensorProto* proto, bool use_typed_fields) const {
  proto->Clear();
  proto->set_dtype(dtype_);
  shape_.ToProto(proto->mutable_tensor_shape());
  if (!IsInitialized()) return;
  const int64_t n = num_elements_;
  if (dtype_ == DT_STRING) {
    const std::string* s = data<std::string>();
    for (int64_t i = 0; i < n; ++i) proto->add_string_val(s[i]);
    return;
  }
  if (!use_typed_fields) {
    proto->set_tensor_content(buffer_->data(), buffer_->size_bytes());
    return;
  }
  switch (dtype_) {
    case DT_FLOAT:
      proto->mutable_float_val()->Add(data<float>(), data<float>() + n);
      break;
    case DT_DOUBLE:
      proto->mutable_double_val()->Add(data<double>(), data<double>() + n);
      break;
    case DT_INT32:
      proto->mutable_int_val()->Add(data<int32_t>(), data<int32_t>() + n);
      break;
    case DT_INT64:
      for (int64_t i = 0; i < n; ++i) proto->add_int64_val(data<int64_t>()[i]);
      break;
    case DT_BOOL:
      for (int64_t i = 0; i < n; ++i) proto->add_bool_val(data<bool>()[i]);
      break;
    default:
      break;
  }
}

std::string Tensor::DebugString(int max_entries) const {
  std::string out =
      absl::StrCat("Tensor<", DataTypeString(dtype_), ", ", shape_.DebugString(), ">");
  if (!IsInitialized()) return out + ": <uninitialized>";
  out += ":";
  const int64_t n = std::min<int64_t>(num_elements_, max_entries);
  for (int64_t i = 0; i < n; ++i) absl::StrAppend(&out, " ", ElementString(*this, i));
  if (num_elements_ > n) out += " ...";
  return out;
}

bool Tensor::Equals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (IsInitialized() != other.IsInitialized()) return false;
  if (!IsInitialized()) return true;
  if (dtype_ == DT_STRING) {
    for (int64_t i = 0; i < num_elements_; ++i) {
      if (data<std::string>()[i] != other.data<std::string>()[i]) return false;
    }
    return true;
  }
  return std::memcmp(buffer_->data(), other.buffer_->data(), buffer_->size_bytes()) == 0;
}

}  // namespace overseer
