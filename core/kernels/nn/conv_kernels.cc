// Kernels of Conv2D and its two backprops, MaxPool, AvgPool and their gradients (NHWC).
// A convolution lays each image's windows out as rows (im2col) and multiplies them with
// the filter through Eigen's contraction on the kernel's device, a chunk of images at a
// time so that the rows stay within kMaxColumnBytes; the backprops are the two other
// products of the same matrices. Pooling loops over each window, images in parallel.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/nn/conv_geometry.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

// The most bytes of window rows (im2col) a convolution holds at once.
constexpr int64_t kMaxColumnBytes = int64_t{64} << 20;

template <typename T>
using Matrix = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::DenseIndex>>;
template <typename T>
using ConstMatrix = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::DenseIndex>>;
using Pair = Eigen::IndexPair<Eigen::DenseIndex>;

// The attrs of every op here, checked once.
class WindowOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("strides", &attrs_.strides));
    RETURN_IF_ERROR(c->GetAttr("padding", &attrs_.padding));
    RETURN_IF_ERROR(c->GetAttr("data_format", &attrs_.data_format));
    const bool pool = c->op_def().FindAttr("ksize") != nullptr;
    if (pool) RETURN_IF_ERROR(c->GetAttr("ksize", &attrs_.ksize));
    if (c->op_def().FindAttr("dilations") != nullptr) {
      RETURN_IF_ERROR(c->GetAttr("dilations", &attrs_.dilations));
    }
    return attrs_.Validate(pool);
  }

 protected:
  WindowAttrs attrs_;
};

// A 4-D shape from an int32 or int64 sizes input (a backprop's input_sizes).
absl::StatusOr<TensorShape> SizesInput(const Tensor& sizes, const char* what) {
  if (sizes.dims() != 1 || sizes.NumElements() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be a vector of 4 sizes (NHWC), got shape ", sizes.shape().DebugString()));
  }
  std::vector<int64_t> dims = Int64Values(sizes);
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must not be negative, got ", TensorShape(dims).DebugString()));
    }
  }
  return TensorShape(dims);
}

// Everything about one convolution's shapes.
struct ConvShape {
  int64_t batch = 0, depth = 0, out_depth = 0;
  Window rows, cols;
  int64_t patch() const { return rows.k * cols.k * depth; }    // One window's elements.
  int64_t positions() const { return rows.out * cols.out; }    // Windows per image.
  int64_t image() const { return rows.in * cols.in * depth; }  // Input elements per image.
  TensorShape output() const { return TensorShape({batch, rows.out, cols.out, out_depth}); }
  // Images per chunk: as many as fit in kMaxColumnBytes of window rows, at least one.
  int64_t chunk(size_t element_bytes) const {
    const int64_t per_image = std::max<int64_t>(1, positions() * patch()) * element_bytes;
    return std::clamp<int64_t>(kMaxColumnBytes / per_image, 1, std::max<int64_t>(batch, 1));
  }
};

absl::StatusOr<ConvShape> MakeConvShape(const TensorShape& input, const TensorShape& filter,
                                        const WindowAttrs& attrs) {
  if (input.dims() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input must be 4-dimensional [batch, height, width, depth], got ", input.DebugString()));
  }
  if (filter.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("filter must be 4-dimensional [height, width, in_channels, out_channels], "
                     "got ",
                     filter.DebugString()));
  }
  if (input.dim_size(3) != filter.dim_size(2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input depth ", input.dim_size(3), " does not match the filter's ", filter.dim_size(2),
        " input channels (input ", input.DebugString(), ", filter ", filter.DebugString(), ")"));
  }
  ConvShape s;
  s.batch = input.dim_size(0);
  s.depth = input.dim_size(3);
  s.out_depth = filter.dim_size(3);
  ASSIGN_OR_RETURN(
      s.rows, MakeWindow(input.dim_size(1), filter.dim_size(0), attrs.strides[1], attrs.same()));
  ASSIGN_OR_RETURN(
      s.cols, MakeWindow(input.dim_size(2), filter.dim_size(1), attrs.strides[2], attrs.same()));
  return s;
}

absl::Status CheckOutBackprop(const Tensor& grad, const TensorShape& want) {
  if (grad.shape() == want) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("out_backprop has shape ", grad.shape().DebugString(),
                   " but the convolution's output is ", want.DebugString()));
}

// Row (oh * out_cols + ow) of `cols` is the window of output (oh, ow) of one image,
// flattened as [kh][kw][depth]; positions in the padding are zero.
template <typename T>
void Im2Col(const T* image, const ConvShape& s, T* cols) {
  const int64_t depth = s.depth;
  for (int64_t oh = 0; oh < s.rows.out; ++oh) {
    for (int64_t ow = 0; ow < s.cols.out; ++ow) {
      T* row = cols + (oh * s.cols.out + ow) * s.patch();
      for (int64_t kh = 0; kh < s.rows.k; ++kh) {
        const int64_t ih = oh * s.rows.stride - s.rows.pad_before + kh;
        for (int64_t kw = 0; kw < s.cols.k; ++kw) {
          const int64_t iw = ow * s.cols.stride - s.cols.pad_before + kw;
          T* dst = row + (kh * s.cols.k + kw) * depth;
          if (ih < 0 || ih >= s.rows.in || iw < 0 || iw >= s.cols.in) {
            std::fill(dst, dst + depth, T(0));
          } else {
            std::memcpy(dst, image + (ih * s.cols.in + iw) * depth, depth * sizeof(T));
          }
        }
      }
    }
  }
}

// The reverse of Im2Col: adds each window row back onto the image it came from.
template <typename T>
void Col2ImAdd(const T* cols, const ConvShape& s, T* image) {
  const int64_t depth = s.depth;
  for (int64_t oh = 0; oh < s.rows.out; ++oh) {
    for (int64_t ow = 0; ow < s.cols.out; ++ow) {
      const T* row = cols + (oh * s.cols.out + ow) * s.patch();
      for (int64_t kh = 0; kh < s.rows.k; ++kh) {
        const int64_t ih = oh * s.rows.stride - s.rows.pad_before + kh;
        if (ih < 0 || ih >= s.rows.in) continue;
        for (int64_t kw = 0; kw < s.cols.k; ++kw) {
          const int64_t iw = ow * s.cols.stride - s.cols.pad_before + kw;
          if (iw < 0 || iw >= s.cols.in) continue;
          const T* src = row + (kh * s.cols.k + kw) * depth;
          T* dst = image + (ih * s.cols.in + iw) * depth;
          for (int64_t c = 0; c < depth; ++c) dst[c] += src[c];
        }
      }
    }
  }
}

class Conv2DOp : public WindowOp {
 public:
  using WindowOp::WindowOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    ASSIGN_OR_RETURN(ConvShape s, MakeConvShape(input.shape(), filter.shape(), attrs_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, s.output()));
    if (out->NumElements() == 0 || s.patch() == 0) return absl::OkStatus();  // Zeros.
    return VisitFloatTypes(input.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t chunk = s.chunk(sizeof(T)), p = s.positions(), k = s.patch();
      std::vector<T> cols(chunk * p * k);
      ConstMatrix<T> w(filter.data<T>(), k, s.out_depth);
      for (int64_t b0 = 0; b0 < s.batch; b0 += chunk) {
        const int64_t nb = std::min(chunk, s.batch - b0);
        for (int64_t i = 0; i < nb; ++i) {
          Im2Col(input.data<T>() + (b0 + i) * s.image(), s, cols.data() + i * p * k);
        }
        ConstMatrix<T> x(cols.data(), nb * p, k);
        Matrix<T> y(out->data<T>() + b0 * p * s.out_depth, nb * p, s.out_depth);
        y.device(ctx->eigen_device()) = x.contract(w, Eigen::array<Pair, 1>{Pair(1, 0)});
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(Conv2DOp, "Conv2D");

class Conv2DBackpropInputOp : public WindowOp {
 public:
  using WindowOp::WindowOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(TensorShape input_shape, SizesInput(ctx->input(0), "input_sizes"));
    const Tensor& filter = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    ASSIGN_OR_RETURN(ConvShape s, MakeConvShape(input_shape, filter.shape(), attrs_));
    RETURN_IF_ERROR(CheckOutBackprop(grad, s.output()));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, input_shape));
    if (grad.NumElements() == 0 || s.patch() == 0) return absl::OkStatus();  // Zeros.
    return VisitFloatTypes(grad.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t chunk = s.chunk(sizeof(T)), p = s.positions(), k = s.patch();
      std::vector<T> cols(chunk * p * k);
      ConstMatrix<T> w(filter.data<T>(), k, s.out_depth);
      T* dx = out->data<T>();
      std::fill(dx, dx + out->NumElements(), T(0));
      for (int64_t b0 = 0; b0 < s.batch; b0 += chunk) {
        const int64_t nb = std::min(chunk, s.batch - b0);
        ConstMatrix<T> dy(grad.data<T>() + b0 * p * s.out_depth, nb * p, s.out_depth);
        Matrix<T> dcols(cols.data(), nb * p, k);
        dcols.device(ctx->eigen_device()) = dy.contract(w, Eigen::array<Pair, 1>{Pair(1, 1)});
        for (int64_t i = 0; i < nb; ++i) {
          Col2ImAdd(cols.data() + i * p * k, s, dx + (b0 + i) * s.image());
        }
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(Conv2DBackpropInputOp, "Conv2DBackpropInput");

class Conv2DBackpropFilterOp : public WindowOp {
 public:
  using WindowOp::WindowOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    ASSIGN_OR_RETURN(TensorShape filter_shape, SizesInput(ctx->input(1), "filter_sizes"));
    const Tensor& grad = ctx->input(2);
    ASSIGN_OR_RETURN(ConvShape s, MakeConvShape(input.shape(), filter_shape, attrs_));
    RETURN_IF_ERROR(CheckOutBackprop(grad, s.output()));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, filter_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    return VisitFloatTypes(input.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t chunk = s.chunk(sizeof(T)), p = s.positions(), k = s.patch();
      std::vector<T> cols(chunk * p * k);
      Matrix<T> dw(out->data<T>(), k, s.out_depth);
      dw.setZero();
      for (int64_t b0 = 0; b0 < s.batch; b0 += chunk) {
        const int64_t nb = std::min(chunk, s.batch - b0);
        for (int64_t i = 0; i < nb; ++i) {
          Im2Col(input.data<T>() + (b0 + i) * s.image(), s, cols.data() + i * p * k);
        }
        ConstMatrix<T> x(cols.data(), nb * p, k);
        ConstMatrix<T> dy(grad.data<T>() + b0 * p * s.out_depth, nb * p, s.out_depth);
        dw.device(ctx->eigen_device()) += x.contract(dy, Eigen::array<Pair, 1>{Pair(0, 0)});
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(Conv2DBackpropFilterOp, "Conv2DBackpropFilter");

// One pooling's shapes.
struct PoolShape {
  int64_t batch = 0, depth = 0;
  Window rows, cols;
  TensorShape output() const { return TensorShape({batch, rows.out, cols.out, depth}); }
};

absl::StatusOr<PoolShape> MakePoolShape(const TensorShape& input, const WindowAttrs& attrs) {
  if (input.dims() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input must be 4-dimensional [batch, height, width, depth], got ", input.DebugString()));
  }
  PoolShape s;
  s.batch = input.dim_size(0);
  s.depth = input.dim_size(3);
  ASSIGN_OR_RETURN(s.rows,
                   MakeWindow(input.dim_size(1), attrs.ksize[1], attrs.strides[1], attrs.same()));
  ASSIGN_OR_RETURN(s.cols,
                   MakeWindow(input.dim_size(2), attrs.ksize[2], attrs.strides[2], attrs.same()));
  return s;
}

// Calls fn(b, oh, ow, first_row, last_row, first_col, last_col) for every output position
// of every image, with the window clipped to the input; images run in parallel on the
// kernel's device (each writes only its own image's gradient).
template <typename Fn>
void ForEachWindow(OpKernelContext* ctx, const PoolShape& s, Fn&& fn) {
  const double cost = static_cast<double>(s.rows.out * s.cols.out * s.rows.k * s.cols.k * s.depth);
  ctx->eigen_device().parallelFor(
      s.batch, Eigen::TensorOpCost(cost * 4, cost * 4, cost),
      [&](Eigen::Index first, Eigen::Index last) {
        for (Eigen::Index b = first; b < last; ++b) {
          for (int64_t oh = 0; oh < s.rows.out; ++oh) {
            const int64_t h0 = oh * s.rows.stride - s.rows.pad_before;
            const int64_t h_first = std::max<int64_t>(h0, 0);
            const int64_t h_last = std::min<int64_t>(h0 + s.rows.k, s.rows.in);
            for (int64_t ow = 0; ow < s.cols.out; ++ow) {
              const int64_t w0 = ow * s.cols.stride - s.cols.pad_before;
              const int64_t w_first = std::max<int64_t>(w0, 0);
              const int64_t w_last = std::min<int64_t>(w0 + s.cols.k, s.cols.in);
              fn(b, oh, ow, h_first, h_last, w_first, w_last);
            }
          }
        }
      });
}

// Index (into the image) of the largest input in each channel of a window; the first of
// equal ones, and a NaN wins.
template <typename T>
void WindowArgmax(const T* image, const PoolShape& s, int64_t h_first, int64_t h_last,
                  int64_t w_first, int64_t w_last, int64_t* argmax) {
  for (int64_t c = 0; c < s.depth; ++c) argmax[c] = -1;
  for (int64_t h = h_first; h < h_last; ++h) {
    for (int64_t w = w_first; w < w_last; ++w) {
      const int64_t base = (h * s.cols.in + w) * s.depth;
      for (int64_t c = 0; c < s.depth; ++c) {
        const T v = image[base + c];
        const int64_t best = argmax[c];
        if (best < 0 || (!std::isnan(image[best]) && (v > image[best] || std::isnan(v)))) {
          argmax[c] = base + c;
        }
      }
    }
  }
}

// A pooling forward: out[b, oh, ow, :] = reduce over the window of image b, clipped to
// the input. `reduce(in, out, h0, h1, w0, w1)` is called with typed pointers to the
// image and to the output position's channels.
template <typename Reduce>
absl::Status PoolForward(OpKernelContext* ctx, const WindowAttrs& attrs, const OpKernel& kernel,
                         Reduce&& reduce) {
  const Tensor& input = ctx->input(0);
  ASSIGN_OR_RETURN(PoolShape s, MakePoolShape(input.shape(), attrs));
  ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, s.output()));
  if (out->NumElements() == 0) return absl::OkStatus();
  return VisitFloatTypes(input.dtype(), kernel.type_string(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t image = s.rows.in * s.cols.in * s.depth;
    ForEachWindow(
        ctx, s,
        [&](int64_t b, int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
          reduce(s, input.data<T>() + b * image,
                 out->data<T>() + ((b * s.rows.out + oh) * s.cols.out + ow) * s.depth, h0, h1, w0,
                 w1);
        });
    return absl::OkStatus();
  });
}

class MaxPoolOp : public WindowOp {
 public:
  using WindowOp::WindowOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    return PoolForward(ctx, attrs_, *this,
                       [](const PoolShape& s, const auto* in, auto* o, int64_t h0, int64_t h1,
                          int64_t w0, int64_t w1) {
                         std::vector<int64_t> argmax(s.depth);
                         WindowArgmax(in, s, h0, h1, w0, w1, argmax.data());
                         for (int64_t c = 0; c < s.depth; ++c) o[c] = in[argmax[c]];
                       });
  }
};
REGISTER_KERNEL(MaxPoolOp, "MaxPool");

// A pooling gradient into zeros shaped like the input: `spread(image, dx, g, h0, h1, w0,
// w1)` adds the output position's gradient `g` (its channels) onto image b's gradient
// `dx`, given that image's input (null when the op has no input, AvgPoolGrad).
template <typename Spread>
absl::Status PoolBackward(OpKernelContext* ctx, const OpKernel& kernel, const PoolShape& s,
                          const Tensor* input, const Tensor& grad, const TensorShape& input_shape,
                          Spread&& spread) {
  if (grad.shape() != s.output()) {
    return absl::InvalidArgumentError(absl::StrCat("grad ", grad.shape().DebugString(),
                                                   " must have the pooling's output shape ",
                                                   s.output().DebugString()));
  }
  ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, input_shape));
  if (out->NumElements() == 0) return absl::OkStatus();
  return VisitFloatTypes(grad.dtype(), kernel.type_string(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t image = s.rows.in * s.cols.in * s.depth;
    T* dx = out->data<T>();
    std::fill(dx, dx + out->NumElements(), T(0));
    ForEachWindow(
        ctx, s,
        [&](int64_t b, int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
          spread(input != nullptr ? input->data<T>() + b * image : nullptr, dx + b * image,
                 grad.data<T>() + ((b * s.rows.out + oh) * s.cols.out + ow) * s.depth, h0, h1, w0,
                 w1);
        });
    return absl::OkStatus();
  });
}

class MaxPoolGradOp : public WindowOp {
 public:
  using WindowOp::WindowOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& output = ctx->input(1);
    ASSIGN_OR_RETURN(PoolShape s, MakePoolShape(input.shape(), attrs_));
    if (output.shape() != s.output()) {
      return absl::InvalidArgumentError(absl::StrCat("orig_output ", output.shape().DebugString(),
                                                     " must have the pooling's output shape ",
                                                     s.output().DebugString()));
    }
    // The gradient goes to the window's largest input, found again as MaxPool found it.
    return PoolBackward(ctx, *this, s, &input, ctx->input(2), input.shape(),
                        [&s](const auto* in, auto* dx, const auto* g, int64_t h0, int64_t h1,
                             int64_t w0, int64_t w1) {
                          std::vector<int64_t> argmax(s.depth);
                          WindowArgmax(in, s, h0, h1, w0, w1, argmax.data());
                          for (int64_t c = 0; c < s.depth; ++c) dx[argmax[c]] += g[c];
                        });
  }
};
REGISTER_KERNEL(MaxPoolGradOp, "MaxPoolGrad");

class AvgPoolOp : public WindowOp {
 public:
  using WindowOp::WindowOp;
  // The mean of the window's inputs, padding left out (as TensorFlow).
  absl::Status Compute(OpKernelContext* ctx) override {
    return PoolForward(ctx, attrs_, *this,
                       [](const PoolShape& s, const auto* in, auto* o, int64_t h0, int64_t h1,
                          int64_t w0, int64_t w1) {
                         using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
                         std::fill(o, o + s.depth, T(0));
                         for (int64_t h = h0; h < h1; ++h) {
                           for (int64_t w = w0; w < w1; ++w) {
                             const T* v = in + (h * s.cols.in + w) * s.depth;
                             for (int64_t c = 0; c < s.depth; ++c) o[c] += v[c];
                           }
                         }
                         const T count = static_cast<T>((h1 - h0) * (w1 - w0));
                         for (int64_t c = 0; c < s.depth; ++c) o[c] /= count;
                       });
  }
};
REGISTER_KERNEL(AvgPoolOp, "AvgPool");

class AvgPoolGradOp : public WindowOp {
 public:
  using WindowOp::WindowOp;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(TensorShape input_shape, SizesInput(ctx->input(0), "orig_input_shape"));
    ASSIGN_OR_RETURN(PoolShape s, MakePoolShape(input_shape, attrs_));
    // Each input of the window gets an equal share.
    return PoolBackward(ctx, *this, s, nullptr, ctx->input(1), input_shape,
                        [&s](const auto* /*in*/, auto* dx, const auto* g, int64_t h0, int64_t h1,
                             int64_t w0, int64_t w1) {
                          using T = std::remove_pointer_t<decltype(dx)>;
                          const T count = static_cast<T>((h1 - h0) * (w1 - w0));
                          for (int64_t h = h0; h < h1; ++h) {
                            for (int64_t w = w0; w < w1; ++w) {
                              T* d = dx + (h * s.cols.in + w) * s.depth;
                              for (int64_t c = 0; c < s.depth; ++c) d[c] += g[c] / count;
                            }
                          }
                        });
  }
};
REGISTER_KERNEL(AvgPoolGradOp, "AvgPoolGrad");

}  // namespace
}  // namespace overseer
