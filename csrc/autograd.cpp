// autograd.cpp: the Autograd kernels of sum, mean, prod, amax and amin, in C++.
//
// A C++ torch::autograd::Function per op, registered at the Autograd key for every device: the
// forward calls the op below autograd, the backward is plain ATen ops (so it is traceable by
// torch.compile, works with symbolic sizes, and is differentiable again). Python-registered
// autograd (torch.library.register_autograd) cost ~5 µs of host time per call; this path costs
// a fraction of that, and C++ programs (LibTorch) get the same gradients.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/WrapDimUtils.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "plan.h"

namespace treduce {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The reduced dims, wrapped and ascending (plan.h; the op's own kernel has already checked them).
std::vector<int64_t> reduced_dims(const at::Tensor& x, at::OptionalIntArrayRef dim) {
  return reduced_dim_list(x.dim(), dim);
}

// A reduced result, or its gradient, with the reduced dims back as size 1 (for broadcasting).
at::Tensor restore_dims(at::Tensor t, const std::vector<int64_t>& dims, bool keepdim) {
  if (!keepdim)
    for (int64_t d : dims) t = t.unsqueeze(d);  // ascending, so each index is final
  return t;
}

std::vector<int64_t> saved_dims(AutogradContext* ctx) {
  return ctx->saved_data["dims"].toIntVector();
}

using SumSig = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                          std::optional<at::ScalarType>);
using ExtremeSig = at::Tensor(const at::Tensor&, at::IntArrayRef, bool);

// The ops' handles, each looked up once.
template <bool kMean>
const c10::TypedOperatorHandle<SumSig>& sum_like_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow(kMean ? "treduce::mean" : "treduce::sum", "")
                             .typed<SumSig>();
  return op;
}
template <bool kMax>
const c10::TypedOperatorHandle<ExtremeSig>& extreme_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow(kMax ? "treduce::amax" : "treduce::amin", "")
                             .typed<ExtremeSig>();
  return op;
}

// No graph to record (no grad mode, or an input that does not require grad): call the kernel
// below autograd directly, without a Node or saved state.
bool needs_graph(const at::Tensor& self) {
  return at::GradMode::is_enabled() && self.requires_grad();
}

// sum (kMean = false) and mean: the gradient expanded back over the reduced dims (and divided by
// the count for mean), in the input's dtype.
template <bool kMean>
struct SumLike : public torch::autograd::Function<SumLike<kMean>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self,
                            at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
    const auto& op = sum_like_op<kMean>();
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = op.call(self, dim, keepdim, dtype);
    }
    ctx->saved_data["dims"] = reduced_dims(self, dim);
    ctx->saved_data["keepdim"] = keepdim;
    ctx->saved_data["sizes"] = self.sym_sizes();
    ctx->saved_data["dtype"] = self.scalar_type();
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> dims = saved_dims(ctx);
    const std::vector<c10::SymInt> sizes = ctx->saved_data["sizes"].toSymIntVector();
    at::Tensor g =
        restore_dims(grads[0], dims, ctx->saved_data["keepdim"].toBool()).expand_symint(sizes);
    if constexpr (kMean) {
      c10::SymInt count = 1;
      for (int64_t d : dims) count = count * sizes[d];
      g = g / c10::Scalar(count);
    }
    return {g.to(ctx->saved_data["dtype"].toScalarType()), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

// amax (kMax) and amin: the gradient goes to every element equal to the extreme, split evenly
// among ties, as in torch.
template <bool kMax>
struct Extreme : public torch::autograd::Function<Extreme<kMax>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::IntArrayRef dim,
                            bool keepdim) {
    const auto& op = extreme_op<kMax>();
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = op.call(self, dim, keepdim);
    }
    ctx->saved_data["dims"] = reduced_dims(self, dim);
    ctx->saved_data["keepdim"] = keepdim;
    ctx->save_for_backward({self, out});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> dims = saved_dims(ctx);
    const bool keepdim = ctx->saved_data["keepdim"].toBool();
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& out = saved[1];
    const at::Tensor& grad = grads[0];
    const at::Tensor mask = x.eq(restore_dims(out, dims, keepdim)).to(grad.scalar_type());
    const at::Tensor count = dims.empty() ? mask : mask.sum(dims, /*keepdim=*/true);
    const at::Tensor g = restore_dims(grad, dims, keepdim) / count;
    return {g * mask, at::Tensor(), at::Tensor()};
  }
};

using ProdSig = SumSig;

const c10::TypedOperatorHandle<ProdSig>& prod_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("treduce::prod", "").typed<ProdSig>();
  return op;
}

// prod: d prod / d x_i is the product of all the other elements, from exclusive products taken
// from both ends (cumprod), so that zeros, one or several, need no division, as in torch.
struct Prod : public torch::autograd::Function<Prod> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self,
                            at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = prod_op().call(self, dim, keepdim, dtype);
    }
    ctx->saved_data["dims"] = reduced_dims(self, dim);
    ctx->save_for_backward({self});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> dims = saved_dims(ctx);
    const at::Tensor x = ctx->get_saved_variables()[0];
    const at::Tensor& grad = grads[0];
    const variable_list none = {at::Tensor(), at::Tensor(), at::Tensor()};
    auto result = [&](at::Tensor g) {
      variable_list r = {std::move(g)};
      r.insert(r.end(), none.begin(), none.end());
      return r;
    };
    if (dims.empty()) return result(grad.to(x.scalar_type()));
    // (kept dims..., reduced dims...) with the reduced ones flattened into the last dim
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!std::binary_search(dims.begin(), dims.end(), d)) perm.push_back(d);
    const size_t n_keep = perm.size();
    perm.insert(perm.end(), dims.begin(), dims.end());
    const at::Tensor xp = x.permute(perm);
    std::vector<c10::SymInt> shape(xp.sym_sizes().begin(), xp.sym_sizes().begin() + n_keep);
    shape.emplace_back(-1);
    const at::Tensor flat = xp.reshape_symint(shape).to(grad.scalar_type());
    const c10::SymInt n = flat.sym_size(-1);
    if (n == 0) return result(at::zeros_like(x));
    const at::Tensor ones = at::ones_like(flat.narrow_symint(-1, 0, 1));
    const at::Tensor left = at::cat({ones, flat.narrow_symint(-1, 0, n - 1)}, -1).cumprod(-1);
    const at::Tensor right =
        at::cat({ones, flat.flip(-1).narrow_symint(-1, 0, n - 1)}, -1).cumprod(-1).flip(-1);
    shape.back() = 1;
    const at::Tensor g = grad.reshape_symint(shape) * (left * right);
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
    return result(g.reshape_symint(xp.sym_sizes()).permute(inv).to(x.scalar_type()));
  }
};

at::Tensor prod_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         std::optional<at::ScalarType> dtype) {
  if (!needs_graph(self)) {
    at::AutoDispatchBelowADInplaceOrView below;
    return prod_op().call(self, dim, keepdim, dtype);
  }
  return Prod::apply(self, dim, keepdim, dtype);
}

template <bool kMean>
at::Tensor sum_like_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                             std::optional<at::ScalarType> dtype) {
  if (!needs_graph(self)) {
    at::AutoDispatchBelowADInplaceOrView below;
    return sum_like_op<kMean>().call(self, dim, keepdim, dtype);
  }
  return SumLike<kMean>::apply(self, dim, keepdim, dtype);
}

template <bool kMax>
at::Tensor extreme_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  if (!needs_graph(self)) {
    at::AutoDispatchBelowADInplaceOrView below;
    return extreme_op<kMax>().call(self, dim, keepdim);
  }
  return Extreme<kMax>::apply(self, dim, keepdim);
}

}  // namespace

TORCH_LIBRARY_IMPL(treduce, Autograd, m) {
  m.impl("sum", &sum_like_autograd<false>);
  m.impl("mean", &sum_like_autograd<true>);
  m.impl("prod", &prod_autograd);
  m.impl("amax", &extreme_autograd<true>);
  m.impl("amin", &extreme_autograd<false>);
}

}  // namespace treduce
