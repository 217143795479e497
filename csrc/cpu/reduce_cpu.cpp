// CPU backend: registers the CPU kernels (reduce_cpu.h, instantiated per op family in
// family_*.cpp) for every op.
#include <torch/library.h>

#include "families.h"

namespace treduce {
namespace {

void cpu_launch(const Plan& plan, at::Tensor& out) {
  switch (plan.kind) {
    case OpKind::kSum:
    case OpKind::kMean:
      return cpu_reduce::sum_mean_cpu(plan, out);
    case OpKind::kProd:
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor:
      return cpu_reduce::prod_bitwise_cpu(plan, out);
    case OpKind::kAmax:
    case OpKind::kAmin:
    case OpKind::kArgmax:
    case OpKind::kArgmin:
      return cpu_reduce::extreme_cpu(plan, out);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(treduce, CPU, m) {
  // Floating sums, means and products reduce in logical order (the canonical order), whatever
  // the layout.
  m.impl("sum", &entry_dtype<OpKind::kSum, &cpu_launch, /*kLogical=*/true>);
  m.impl("mean", &entry_dtype<OpKind::kMean, &cpu_launch, /*kLogical=*/true>);
  m.impl("prod", &entry_dtype<OpKind::kProd, &cpu_launch, /*kLogical=*/true>);
  m.impl("amax", &entry_dims<OpKind::kAmax, &cpu_launch>);
  m.impl("amin", &entry_dims<OpKind::kAmin, &cpu_launch>);
  m.impl("argmax", &entry_arg<OpKind::kArgmax, &cpu_launch>);
  m.impl("argmin", &entry_arg<OpKind::kArgmin, &cpu_launch>);
  m.impl("bitwise_and", &entry_opt_dims<OpKind::kAnd, &cpu_launch>);
  m.impl("bitwise_or", &entry_opt_dims<OpKind::kOr, &cpu_launch>);
  m.impl("bitwise_xor", &entry_opt_dims<OpKind::kXor, &cpu_launch>);
}

}  // namespace treduce
