#include "client/session/gradients_checker.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "client/graph/gradients.h"
#include "client/graph/ops_array.h"
#include "client/session/client_session.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {

namespace {

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == DT_DOUBLE ? t.flat<double>()(i) : t.flat<float>()(i);
}

void Set(Tensor* t, int64_t i, double v) {
  if (t->dtype() == DT_DOUBLE) {
    t->flat<double>()(i) = v;
  } else {
    t->flat<float>()(i) = static_cast<float>(v);
  }
}

absl::Status CheckFloating(const Output& t, const char* what) {
  if (!t.valid()) return absl::InvalidArgumentError(absl::StrCat(what, " is null"));
  if (!IsFloatingType(RemoveRefType(t.dtype()))) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", t.name(), "' has dtype ",
                                                   DataTypeString(t.dtype()),
                                                   "; the checker needs float or double"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JacobianPair> ComputeJacobians(const Scope& scope, const std::vector<Output>& xs,
                                              const std::vector<Tensor>& x_values,
                                              const std::vector<Output>& ys, double delta) {
  if (xs.size() != x_values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(xs.size(), " xs but ", x_values.size(), " x_values"));
  }
  for (const Output& x : xs) RETURN_IF_ERROR(CheckFloating(x, "x"));
  for (const Output& y : ys) RETURN_IF_ERROR(CheckFloating(y, "y"));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (x_values[i].dtype() != RemoveRefType(xs[i].dtype())) {
      return absl::InvalidArgumentError(
          absl::StrCat("x_values[", i, "] has dtype ", DataTypeString(x_values[i].dtype()),
                       " but x '", xs[i].name(), "' has ", DataTypeString(xs[i].dtype())));
    }
  }
  // One fed output gradient per y, and the symbolic gradients they drive.
  const Scope s = scope.NewSubScope("gradient_checker");
  std::vector<Output> dys;
  for (const Output& y : ys) dys.push_back(ops::Placeholder(s, RemoveRefType(y.dtype())));
  std::vector<Output> dxs;
  RETURN_IF_ERROR(AddSymbolicGradients(s, ys, xs, dys, &dxs));
  RETURN_IF_ERROR(scope.status());
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session, ClientSession::Create(scope));

  std::vector<FeedPair> feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(xs[i], x_values[i].DeepCopy());
  std::vector<Tensor> y_values;
  RETURN_IF_ERROR(session->Run(feeds, ys, &y_values));

  JacobianPair jac;
  std::vector<int64_t> x_offset, y_offset;
  for (const Tensor& v : x_values) {
    x_offset.push_back(jac.x_size);
    jac.x_size += v.NumElements();
  }
  for (const Tensor& v : y_values) {
    y_offset.push_back(jac.y_size);
    jac.y_size += v.NumElements();
  }
  jac.symbolic.assign(jac.x_size * jac.y_size, 0.0);
  jac.numeric.assign(jac.x_size * jac.y_size, 0.0);

  // Symbolic: row j of the Jacobian's transpose from a one-hot dy.
  for (size_t yi = 0; yi < ys.size(); ++yi) {
    for (int64_t e = 0; e < y_values[yi].NumElements(); ++e) {
      std::vector<FeedPair> f = feeds;
      for (size_t k = 0; k < ys.size(); ++k) {
        Tensor dy(y_values[k].dtype(), y_values[k].shape());
        if (k == yi) Set(&dy, e, 1.0);
        f.emplace_back(dys[k], dy);
      }
      std::vector<Output> fetch;
      std::vector<size_t> fetched_x;
      for (size_t xi = 0; xi < xs.size(); ++xi) {
        if (dxs[xi].valid()) {
          fetch.push_back(dxs[xi]);
          fetched_x.push_back(xi);
        }
      }
      std::vector<Tensor> out;
      RETURN_IF_ERROR(session->Run(f, fetch, &out));
      for (size_t k = 0; k < fetched_x.size(); ++k) {
        const size_t xi = fetched_x[k];
        if (out[k].NumElements() != x_values[xi].NumElements()) {
          return absl::InternalError(absl::StrCat(
              "the gradient for x '", xs[xi].name(), "' has shape ", out[k].shape().DebugString(),
              " but x has ", x_values[xi].shape().DebugString()));
        }
        for (int64_t i = 0; i < out[k].NumElements(); ++i) {
          jac.symbolic[(x_offset[xi] + i) * jac.y_size + y_offset[yi] + e] = Get(out[k], i);
        }
      }
    }
  }

  // Numeric: central differences per x element.
  for (size_t xi = 0; xi < xs.size(); ++xi) {
    for (int64_t i = 0; i < x_values[xi].NumElements(); ++i) {
      std::vector<Tensor> plus, minus;
      for (int sign : {1, -1}) {
        std::vector<FeedPair> f;
        for (size_t k = 0; k < xs.size(); ++k) {
          Tensor v = x_values[k].DeepCopy();
          if (k == xi) Set(&v, i, Get(v, i) + sign * delta);
          f.emplace_back(xs[k], v);
        }
        RETURN_IF_ERROR(session->Run(f, ys, sign > 0 ? &plus : &minus));
      }
      for (size_t yi = 0; yi < ys.size(); ++yi) {
        for (int64_t e = 0; e < plus[yi].NumElements(); ++e) {
          jac.numeric[(x_offset[xi] + i) * jac.y_size + y_offset[yi] + e] =
              (Get(plus[yi], e) - Get(minus[yi], e)) / (2 * delta);
        }
      }
    }
  }
  return jac;
}

absl::StatusOr<double> ComputeGradientError(const Scope& scope, const std::vector<Output>& xs,
                                            const std::vector<Tensor>& x_values,
                                            const std::vector<Output>& ys, double delta) {
  ASSIGN_OR_RETURN(JacobianPair jac, ComputeJacobians(scope, xs, x_values, ys, delta));
  double max_error = 0;
  for (size_t i = 0; i < jac.symbolic.size(); ++i) {
    const double err = std::abs(jac.symbolic[i] - jac.numeric[i]);
    if (std::isnan(err)) return std::numeric_limits<double>::infinity();
    max_error = std::max(max_error, err);
  }
  return max_error;
}

}  // namespace overseer
