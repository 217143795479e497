#include "plan.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <torch/library.h>
#include <c10/core/ScalarType.h>

#include <algorithm>
#include <bitset>
#include <cstdlib>
#include <limits>

#include "dispatch.h"

namespace treduce {

namespace {

bool is_fp8(at::ScalarType t) { return t == at::kFloat8_e4m3fn || t == at::kFloat8_e5m2; }

bool is_arg(OpKind k) { return k == OpKind::kArgmax || k == OpKind::kArgmin; }
bool is_extreme(OpKind k) { return k == OpKind::kAmax || k == OpKind::kAmin; }
bool takes_dtype(OpKind k) { return k == OpKind::kSum || k == OpKind::kMean || k == OpKind::kProd; }
// fp8 inputs: what fp8 training needs (sums, means, scales), beyond torch, which raises.
bool takes_fp8(OpKind k) { return k == OpKind::kSum || k == OpKind::kMean || is_extreme(k); }

bool supported_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kByte:
    case at::kBool:
      return true;
    default:
      return false;
  }
}

void check_dtype(OpKind kind, at::ScalarType t, const char* what) {
  TORCH_CHECK_TYPE(!at::isComplexType(t), "treduce.", op_name(kind), ": complex ", what,
                   " is not supported (got ", t, ")");
  if (is_fp8(t)) {
    TORCH_CHECK_TYPE(takes_fp8(kind) && std::string(what) == "input", "treduce.", op_name(kind),
                     ": float8 ", what, " is not supported (got ", t,
                     "); sum, mean, amax and amin accept float8 inputs");
    return;
  }
  const bool bitwise = kind == OpKind::kAnd || kind == OpKind::kOr || kind == OpKind::kXor;
  TORCH_CHECK_TYPE(supported_dtype(t), "treduce.", op_name(kind), ": ", what, " dtype ", t,
                   " is not supported; supported dtypes are ",
                   bitwise ? "" : "float32, float64, float16, bfloat16, ",
                   "int8, int16, int32, int64, uint8 and bool",
                   takes_fp8(kind) ? " (and float8 inputs)" : "");
}

// The result dtype, with torch's rules (and torch's errors) for each op.
at::ScalarType result_dtype(OpKind kind, at::ScalarType in, std::optional<at::ScalarType> dtype) {
  switch (kind) {
    case OpKind::kSum:
    case OpKind::kProd:
      if (dtype) return *dtype;
      if (at::isIntegralType(in, /*includeBool=*/true)) return at::kLong;
      return is_fp8(in) ? at::kFloat : in;
    case OpKind::kMean:
      if (dtype) {
        TORCH_CHECK(at::isFloatingType(*dtype),
                    "mean(): could not infer output dtype. Optional "
                    "dtype must be either a floating point or complex dtype. Got: ",
                    at::toString(*dtype));
        return *dtype;
      }
      TORCH_CHECK(at::isFloatingType(in),
                  "mean(): could not infer output dtype. Input dtype "
                  "must be either a floating point or complex dtype. Got: ",
                  at::toString(in));
      return is_fp8(in) ? at::kFloat : in;
    case OpKind::kArgmax:
    case OpKind::kArgmin:
      TORCH_CHECK(in != at::kBool, op_name(kind), "(): does not support bool input");
      return at::kLong;
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor:
      TORCH_CHECK_TYPE(at::isIntegralType(in, /*includeBool=*/true), "treduce.", op_name(kind),
                       ": only integer and bool inputs are supported (got ", in, ")");
      return in;
    default:  // amax, amin
      return in;
  }
}

struct Dim {
  int64_t size, in_stride, out_stride;
};

// Merge neighbours that are contiguous in memory (in the output too, for kept dims). With
// `by_stride`, first order the dims by input stride (outermost first; the sort is stable, so ties
// keep their logical order); without it the logical order is kept (the arg ops need it).
std::vector<Dim> canonicalize(std::vector<Dim> dims, bool check_out, bool by_stride) {
  if (by_stride)
    std::stable_sort(dims.begin(), dims.end(),
                     [](const Dim& a, const Dim& b) { return a.in_stride > b.in_stride; });
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& prev = merged.back();
      const bool in_ok = prev.in_stride == d.in_stride * d.size;
      const bool out_ok = !check_out || prev.out_stride == d.out_stride * d.size;
      if (in_ok && out_ok) {
        prev.size *= d.size;
        prev.in_stride = d.in_stride;
        prev.out_stride = d.out_stride;
        continue;
      }
    }
    merged.push_back(d);
  }
  return merged;
}

IndexMap to_map(const std::vector<Dim>& dims) {
  IndexMap m;
  m.ndim = static_cast<int>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    m.sizes[i] = dims[i].size;
    m.in_strides[i] = dims[i].in_stride;
    m.out_strides[i] = dims[i].out_stride;
  }
  return m;
}

// The ops without an identity raise on an empty reduction, with torch's messages and types.
void check_nonempty(OpKind kind, const at::Tensor& self, bool all_dims,
                    const std::bitset<at::dim_bitset_size>& reduced) {
  if (self.sym_numel() != 0) return;
  const char* name = op_name(kind);
  if (all_dims) {
    if (is_arg(kind))
      TORCH_CHECK_INDEX(false, name,
                        "(): Expected reduction dim to be specified for "
                        "input.numel() == 0.");
    TORCH_CHECK(false, name,
                "(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument.");
  }
  for (int64_t d = 0; d < self.dim(); ++d)
    TORCH_CHECK_INDEX(!reduced.test(d) || self.sym_size(d) != 0, name,
                      "(): Expected reduction dim ", d, " to have non-zero size.");
}

}  // namespace

std::bitset<at::dim_bitset_size> reduced_dim_set(int64_t ndim, at::OptionalIntArrayRef dim) {
  // dim=None and dim=[] both mean every dim, as in aten::sum.dim_IntList and aten::amax.
  std::bitset<at::dim_bitset_size> reduced;
  if (!dim.has_value() || dim->empty()) {
    for (int64_t d = 0; d < ndim; ++d) reduced.set(d);
    return reduced;
  }
  std::vector<int64_t> wrapped(dim->begin(), dim->end());
  for (int64_t& d : wrapped) d = at::maybe_wrap_dim(d, ndim);  // all wrapped before any repeat
  return at::dim_list_to_bitset(wrapped, ndim);
}

std::vector<int64_t> reduced_dim_list(int64_t ndim, at::OptionalIntArrayRef dim) {
  const auto set = reduced_dim_set(ndim, dim);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < ndim; ++d)
    if (set.test(d)) dims.push_back(d);
  return dims;
}

Reduction check_reduction(const at::Tensor& self, at::OptionalIntArrayRef dim, OpKind kind,
                          std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(self.layout() == at::kStrided, "treduce.", op_name(kind),
              ": only strided (dense) tensors are supported, got layout ", self.layout());
  check_dtype(kind, self.scalar_type(), "input");
  if (dtype.has_value()) {
    TORCH_CHECK(takes_dtype(kind), "treduce.", op_name(kind), ": takes no dtype argument");
    check_dtype(kind, *dtype, "output");
  }
  Reduction r;
  r.out_dtype = result_dtype(kind, self.scalar_type(), dtype);

  // As torch: every dim wrapped first (IndexError), then, for the ops without an identity,
  // every reduced dim of an empty input checked (IndexError), then the repeats (RuntimeError).
  const int64_t ndim = self.dim();
  const bool all_dims = !dim.has_value() || dim->empty();
  if (!all_dims && (is_extreme(kind) || is_arg(kind)) && self.sym_numel() == 0) {
    std::vector<int64_t> wrapped(dim->begin(), dim->end());
    for (int64_t& d : wrapped) d = at::maybe_wrap_dim(d, ndim);
    for (const int64_t d : wrapped)
      TORCH_CHECK_INDEX(ndim == 0 || self.sym_size(d) != 0, op_name(kind),
                        "(): Expected reduction dim ", d, " to have non-zero size.");
  }
  r.reduced = reduced_dim_set(ndim, dim);
  if (is_extreme(kind) || is_arg(kind)) check_nonempty(kind, self, all_dims, r.reduced);
  return r;
}

Plan make_plan(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, OpKind kind,
               std::optional<at::ScalarType> dtype, bool logical_order) {
  const Reduction r = check_reduction(self, dim, kind, dtype);
  const std::bitset<at::dim_bitset_size>& reduced = r.reduced;
  const int64_t ndim = self.dim();
  Plan plan;
  plan.kind = kind;
  plan.out_dtype = r.out_dtype;
  plan.out_shape = out_shape(self.sizes(), reduced, keepdim);

  // The tensor the kernel reads: the input itself, or (for sum, mean and prod with a dtype=
  // pair that has no kernel, dispatch.h) its conversion to the result dtype. Every stride below is
  // taken from this tensor, never from `self`: a conversion of a view that is not densely packed is
  // a new layout (contiguous), and describing it with the view's strides reads the wrong elements.
  plan.input = self;
  if (takes_dtype(kind) && !native_sum_pair(self.scalar_type(), plan.out_dtype, widens_float(kind)))
    plan.input = self.to(plan.out_dtype);
  const at::Tensor& src = plan.input;

  // Output shape, and the contiguous output stride of each kept dim.
  std::vector<int64_t> out_stride(std::max<int64_t>(ndim, 1), 0);
  {
    int64_t s = 1;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (reduced.test(d)) continue;
      out_stride[d] = s;
      s *= self.size(d);
    }
  }
  std::vector<Dim> kept, red;
  for (int64_t d = 0; d < ndim; ++d) {
    if (src.size(d) == 1) continue;
    if (reduced.test(d))
      red.push_back({src.size(d), src.stride(d), 0});
    else
      kept.push_back({src.size(d), src.stride(d), out_stride[d]});
  }

  // Arg ops: the reduced index must be torch's index. `logical_order`: the canonical order of
  // floating sums (integer sums are exact in any order and keep the faster memory order).
  plan.canonical = logical_order && at::isFloatingType(plan.out_dtype);
  const bool logical = is_arg(kind) || plan.canonical;
  kept = canonicalize(kept, /*check_out=*/true, /*by_stride=*/true);
  red = canonicalize(red, /*check_out=*/false, /*by_stride=*/!logical);
  if (static_cast<int>(kept.size()) > kMaxDims || static_cast<int>(red.size()) > kMaxDims) {
    // Rare: more than kMaxDims dims that cannot be merged. Copy into (kept..., reduced...) order,
    // where each side is one contiguous dim.
    std::vector<int64_t> perm;
    int64_t m = 1, k = 1;
    for (int64_t d = 0; d < ndim; ++d)
      if (!reduced.test(d)) {
        perm.push_back(d);
        m *= self.size(d);
      }
    for (int64_t d = 0; d < ndim; ++d)
      if (reduced.test(d)) {
        perm.push_back(d);
        k *= self.size(d);
      }
    plan.input = plan.input.permute(perm).contiguous();
    kept = {{m, k, 1}};
    red = {{k, 1, 0}};
  }

  Geometry& g = plan.geom;
  g.kept = to_map(kept);
  g.red = to_map(red);
  if (g.red.ndim == 0) {  // nothing left to reduce (K == 1): one contiguous element per output
    g.red.ndim = 1;
    g.red.sizes[0] = 1;
    g.red.in_strides[0] = 1;
  }
  g.num_outputs = 1;
  for (const Dim& d : kept) g.num_outputs *= d.size;
  g.reduce_len = 1;
  for (int i = 0; i < g.red.ndim; ++i) g.reduce_len *= g.red.sizes[i];
  return plan;
}

namespace {

// TREDUCE_POISON=1 (the tests set it) fills every result with NaN, or an unlikely integer, before
// the kernel runs, so that an element the kernel never writes cannot pass as correct.
bool poison_outputs() {
  static const bool on = [] {
    const char* v = std::getenv("TREDUCE_POISON");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

at::Tensor new_output(const Plan& plan) {
  at::Tensor out = at::empty(plan.out_shape, plan.input.options().dtype(plan.out_dtype));
  if (poison_outputs() && out.numel() > 0) {
    if (at::isFloatingType(plan.out_dtype))
      out.fill_(std::numeric_limits<double>::quiet_NaN());
    else
      out.fill_(plan.out_dtype == at::kBool ? 1 : 0x5A);
  }
  return out;
}

// The result of reducing nothing (K == 0): the op's identity, finalized.
void fill_identity(const Plan& plan, at::Tensor& out) {
  switch (plan.kind) {
    case OpKind::kProd:
      out.fill_(1);
      return;
    case OpKind::kMean:
      out.fill_(std::numeric_limits<double>::quiet_NaN());
      return;
    case OpKind::kAnd:  // all bits set
      if (out.scalar_type() == at::kBool)
        out.fill_(true);
      else if (out.scalar_type() == at::kByte)
        out.fill_(0xFF);
      else
        out.fill_(-1);
      return;
    default:
      out.zero_();
      return;  // sum, or, xor (the others never reduce nothing)
  }
}

}  // namespace

at::Tensor run_reduce(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                      OpKind kind, std::optional<at::ScalarType> dtype, LaunchFn launch,
                      bool logical) {
  const Plan plan = make_plan(self, dim, keepdim, kind, dtype, logical);
  at::Tensor out = new_output(plan);
  if (out.numel() == 0) return out;
  if (plan.geom.reduce_len == 0) {
    fill_identity(plan, out);
    return out;
  }
  launch(plan, out);
  return out;
}

// ---- Meta kernels: the result's shape and dtype, and every error, without data ---------------

namespace {

at::Tensor meta_reduce(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       OpKind kind, std::optional<at::ScalarType> dtype) {
  const Reduction r = check_reduction(self, dim, kind, dtype);
  return at::empty_symint(out_shape(self.sym_sizes(), r.reduced, keepdim),
                          self.options().dtype(r.out_dtype));
}

template <OpKind K>  // sum, mean, prod
at::Tensor meta_dtype(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                      std::optional<at::ScalarType> dtype) {
  return meta_reduce(self, dim, keepdim, K, dtype);
}
template <OpKind K>  // amax, amin
at::Tensor meta_dims(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return meta_reduce(self, dim, keepdim, K, std::nullopt);
}
template <OpKind K>  // bitwise_*
at::Tensor meta_opt_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return meta_reduce(self, dim, keepdim, K, std::nullopt);
}
template <OpKind K>  // argmax, argmin
at::Tensor meta_arg(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!dim.has_value()) return meta_reduce(self, std::nullopt, keepdim, K, std::nullopt);
  const int64_t d = *dim;
  return meta_reduce(self, at::IntArrayRef(&d, 1), keepdim, K, std::nullopt);
}

}  // namespace

TORCH_LIBRARY_IMPL(treduce, Meta, m) {
  m.impl("sum", &meta_dtype<OpKind::kSum>);
  m.impl("mean", &meta_dtype<OpKind::kMean>);
  m.impl("prod", &meta_dtype<OpKind::kProd>);
  m.impl("amax", &meta_dims<OpKind::kAmax>);
  m.impl("amin", &meta_dims<OpKind::kAmin>);
  m.impl("argmax", &meta_arg<OpKind::kArgmax>);
  m.impl("argmin", &meta_arg<OpKind::kArgmin>);
  m.impl("bitwise_and", &meta_opt_dims<OpKind::kAnd>);
  m.impl("bitwise_or", &meta_opt_dims<OpKind::kOr>);
  m.impl("bitwise_xor", &meta_opt_dims<OpKind::kXor>);
}

}  // namespace treduce
