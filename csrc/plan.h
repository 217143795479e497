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

enum class OpKind { kSum, kAmax };

struct Plan {
  at::Tensor input;                // what `geom` describes: the input, or a converted copy of it
  std::vector<int64_t> out_shape;  // the result's shape, keepdim applied
  at::ScalarType out_dtype;        // the result's dtype
  Geometry geom;                   // M outputs x K reduced elements over `input`
  int64_t numel_out() const { return geom.num_outputs; }
};

// Validates the call exactly as torch does (same exception types) and builds the plan.
// `dtype` is honoured only for kSum.
Plan make_plan(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, OpKind kind,
               std::optional<at::ScalarType> dtype);

// A backend's kernel for one op: fills `out` (contiguous, plan.out_shape) from plan.input.
using LaunchFn = void (*)(const Plan& plan, at::Tensor& out);

// The op entry points shared by both backends: plan, allocate the contiguous result, handle the
// empty cases (no outputs; a sum over nothing is 0), then call the backend's kernel.
at::Tensor run_sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype, LaunchFn launch);
at::Tensor run_amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, LaunchFn launch);

}  // namespace treduce
