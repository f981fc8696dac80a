// CPU kernels of the summary ops (summary_ops.cc).

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/kernels/summary/histogram.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "proto/summary.pb.h"

namespace overseer {
namespace {

// Reads element i of a numeric tensor as a double.
double NumericAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT:
      return t.flat<float>()(i);
    case DT_DOUBLE:
      return t.flat<double>()(i);
    case DT_INT32:
      return t.flat<int32_t>()(i);
    case DT_INT64:
      return static_cast<double>(t.flat<int64_t>()(i));
    default:
      return 0;
  }
}

absl::Status CheckNumeric(const Tensor& t, absl::string_view what) {
  switch (t.dtype()) {
    case DT_FLOAT:
    case DT_DOUBLE:
    case DT_INT32:
    case DT_INT64:
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          what, " must be float, double, int32 or int64, got ", DataTypeString(t.dtype())));
  }
}

absl::Status SetSummaryOutput(OpKernelContext* ctx, const Summary& summary) {
  ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape({})));
  summary.SerializeToString(&out->scalar<std::string>());
  return absl::OkStatus();
}

absl::Status ScalarStringInput(OpKernelContext* ctx, int i, absl::string_view what,
                               std::string* value) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_STRING || t.NumElements() != 1 || t.shape().dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a string scalar, got ",
                                                   DataTypeString(t.dtype()), " of shape ",
                                                   t.shape().DebugString()));
  }
  *value = t.scalar<std::string>();
  return absl::OkStatus();
}

class ScalarSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    if (tags.shape() != values.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tags and values must have the same shape, got tags of shape ",
          tags.shape().DebugString(), " and values of shape ", values.shape().DebugString()));
    }
    if (tags.dtype() != DT_STRING) {
      return absl::InvalidArgumentError(
          absl::StrCat("tags must be strings, got ", DataTypeString(tags.dtype())));
    }
    RETURN_IF_ERROR(CheckNumeric(values, "values"));
    Summary summary;
    const auto tag_values = tags.flat<std::string>();
    for (int64_t i = 0; i < tags.NumElements(); ++i) {
      Summary::Value* v = summary.add_value();
      v->set_tag(tag_values(i));
      v->set_simple_value(static_cast<float>(NumericAt(values, i)));
    }
    return SetSummaryOutput(ctx, summary);
  }
};
REGISTER_KERNEL(ScalarSummaryOp, "ScalarSummary");

class HistogramSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    std::string tag;
    RETURN_IF_ERROR(ScalarStringInput(ctx, 0, "tag", &tag));
    const Tensor& values = ctx->input(1);
    RETURN_IF_ERROR(CheckNumeric(values, "values"));
    Histogram histogram;
    for (int64_t i = 0; i < values.NumElements(); ++i) {
      const double v = NumericAt(values, i);
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("Nan or Inf in summary histogram for: ", tag));
      }
      histogram.Add(v);
    }
    Summary summary;
    Summary::Value* v = summary.add_value();
    v->set_tag(tag);
    histogram.EncodeToProto(v->mutable_histo());
    return SetSummaryOutput(ctx, summary);
  }
};
REGISTER_KERNEL(HistogramSummaryOp, "HistogramSummary");

class TensorSummaryV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    std::string tag;
    RETURN_IF_ERROR(ScalarStringInput(ctx, 0, "tag", &tag));
    std::string serialized_metadata;
    RETURN_IF_ERROR(ScalarStringInput(ctx, 2, "serialized_summary_metadata", &serialized_metadata));
    Summary summary;
    Summary::Value* v = summary.add_value();
    v->set_tag(tag);
    if (!v->mutable_metadata()->ParseFromString(serialized_metadata)) {
      return absl::InvalidArgumentError(absl::StrCat("serialized_summary_metadata of tag '", tag,
                                                     "' is not a SummaryMetadata proto"));
    }
    ctx->input(1).ToProto(v->mutable_tensor());
    return SetSummaryOutput(ctx, summary);
  }
};
REGISTER_KERNEL(TensorSummaryV2Op, "TensorSummaryV2");

class TensorSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("description", &description_));
    return c->GetAttr("display_name", &display_name_);
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    Summary summary;
    Summary::Value* v = summary.add_value();
    v->set_tag(name());
    v->mutable_metadata()->set_display_name(display_name_);
    v->mutable_metadata()->set_summary_description(description_);
    ctx->input(0).ToProto(v->mutable_tensor());
    return SetSummaryOutput(ctx, summary);
  }

 private:
  std::string description_;
  std::string display_name_;
};
REGISTER_KERNEL(TensorSummaryOp, "TensorSummary");

class MergeSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    Summary merged;
    std::set<std::string> tags;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& input = ctx->input(i);
      if (input.dtype() != DT_STRING) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", i, " must hold serialized summaries (string), got ",
                         DataTypeString(input.dtype())));
      }
      const auto serialized = input.flat<std::string>();
      for (int64_t j = 0; j < input.NumElements(); ++j) {
        Summary summary;
        if (!summary.ParseFromString(serialized(j))) {
          return absl::InvalidArgumentError(
              absl::StrCat("input ", i, " element ", j, " is not a serialized Summary proto"));
        }
        for (Summary::Value& value : *summary.mutable_value()) {
          if (!value.tag().empty() && !tags.insert(value.tag()).second) {
            return absl::InvalidArgumentError(
                absl::StrCat("Duplicate tag ", value.tag(), " found in summary inputs"));
          }
          *merged.add_value() = std::move(value);
        }
      }
    }
    return SetSummaryOutput(ctx, merged);
  }
};
REGISTER_KERNEL(MergeSummaryOp, "MergeSummary");

}  // namespace
}  // namespace overseer
