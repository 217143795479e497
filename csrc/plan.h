// plan.h: from (tensor, dims, keepdim, dtype) to what the backends execute.
//
// One place for the semantics that torch defines and both backends share: dim wrapping and its
// errors, which dims are reduced, the output shape and dtype, the dtype checks, empty inputs. The
// result is a Plan whose Geometry (geometry.h) is the canonical (kept, reduced) description of the
// input's memory layout. Used by cpu/ and cuda/ and by nothing else.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/util/OptionalArrayRef.h>

#include <optional>
#include <vector>

#include <bitset>

#include <ATen/WrapDimUtilsMulti.h>

#include "geometry.h"
#include "op_list.h"

namespace treduce {

struct Plan {
  OpKind kind;
  at::Tensor input;                // what `geom` describes: the input, or a converted copy of it
  std::vector<int64_t> out_shape;  // the result's shape, keepdim applied
  at::ScalarType out_dtype;        // the result's dtype
  Geometry geom;                   // M outputs x K reduced elements over `input`
  bool canonical = false;          // a floating sum, mean or product: reduced dims in logical order
};

// dim normalisation, in one place: the reduced dims of an ndim-dim tensor (every dim when `dim`
// is absent or empty), each wrapped (IndexError) and none repeated (RuntimeError), as torch.
// A 0-d tensor accepts dim 0 and -1 (bit 0 set; it has no dim to reduce).
std::bitset<at::dim_bitset_size> reduced_dim_set(int64_t ndim, at::OptionalIntArrayRef dim);

// The same as an ascending list of dims below ndim.
std::vector<int64_t> reduced_dim_list(int64_t ndim, at::OptionalIntArrayRef dim);

// What torch checks before it reduces, from the tensor's metadata alone (layout, dtype, dim
// count, sizes as SymInts): dtypes, dims (wrapped, repeats), empty reductions of the ops without
// an identity, with torch's exception types. The result dtype and the reduced dims. Shared by
// make_plan and the Meta kernels (which torch.compile's fake tensors run).
struct Reduction {
  at::ScalarType out_dtype;
  std::bitset<at::dim_bitset_size> reduced;
};
Reduction check_reduction(const at::Tensor& self, at::OptionalIntArrayRef dim, OpKind kind,
                          std::optional<at::ScalarType> dtype);

// The result's shape: `sizes` without the reduced dims, or with them as 1 (keepdim).
template <class S>
std::vector<S> out_shape(c10::ArrayRef<S> sizes, const std::bitset<at::dim_bitset_size>& reduced,
                         bool keepdim) {
  std::vector<S> shape;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!reduced.test(d))
      shape.push_back(sizes[d]);
    else if (keepdim)
      shape.push_back(S(1));
  }
  return shape;
}

// Validates the call exactly as torch does (same exception types) and builds the plan. `dim`
// empty or absent means every dim. `dtype` applies to sum, mean and prod. For argmax/argmin the
// reduced dims keep their logical order, so that the reduced index is torch's index; with
// `logical`, ops with a floating result keep it too (the canonical order of floating sums, means
// and products), otherwise they are ordered by memory stride.
Plan make_plan(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, OpKind kind,
               std::optional<at::ScalarType> dtype, bool logical = false);

// A backend's kernel: fills `out` (contiguous, plan.out_shape) from plan.input, for K >= 1.
using LaunchFn = void (*)(const Plan& plan, at::Tensor& out);

// The op entry point shared by both backends: plan, allocate the contiguous result, handle the
// empty cases (no outputs; K == 0 gives the op's identity: 0, 1, NaN for mean, all ones for AND),
// then call the backend's kernel.
at::Tensor run_reduce(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                      OpKind kind, std::optional<at::ScalarType> dtype, LaunchFn launch,
                      bool logical = false);

// Adapters from each schema's arguments to run_reduce, for TORCH_LIBRARY_IMPL in both backends.
template <OpKind K, LaunchFn L, bool kLogical = false>  // sum, mean, prod: int[1]? dim, *, dtype
at::Tensor entry_dtype(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype) {
  return run_reduce(self, dim, keepdim, K, dtype, L, kLogical);
}
template <OpKind K, LaunchFn L>  // amax, amin: int[1] dim=[]
at::Tensor entry_dims(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return run_reduce(self, dim, keepdim, K, std::nullopt, L);
}
template <OpKind K, LaunchFn L>  // bitwise_*: int[1]? dim
at::Tensor entry_opt_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return run_reduce(self, dim, keepdim, K, std::nullopt, L);
}
template <OpKind K, LaunchFn L>  // argmax, argmin: int? dim (None: the flattened index)
at::Tensor entry_arg(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!dim.has_value()) return run_reduce(self, std::nullopt, keepdim, K, std::nullopt, L);
  const int64_t d = *dim;
  return run_reduce(self, at::IntArrayRef(&d, 1), keepdim, K, std::nullopt, L);
}

}  // namespace treduce
