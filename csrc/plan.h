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

#include "geometry.h"

namespace treduce {

enum class OpKind { kSum, kMean, kProd, kAmax, kAmin, kArgmax, kArgmin, kAnd, kOr, kXor };

const char* op_name(OpKind kind);

struct Plan {
  OpKind kind;
  at::Tensor input;                // what `geom` describes: the input, or a converted copy of it
  std::vector<int64_t> out_shape;  // the result's shape, keepdim applied
  at::ScalarType out_dtype;        // the result's dtype
  Geometry geom;                   // M outputs x K reduced elements over `input`
};

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
