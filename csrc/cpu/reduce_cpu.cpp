// CPU backend: registers each op's kernel, its family's entry (families.h: reduce_cpu.h's
// kernels, instantiated per op family in family_*.cpp).
#include <torch/library.h>

#include "families.h"

namespace treduce {

using cpu_reduce::extreme_cpu;
using cpu_reduce::prod_bitwise_cpu;
using cpu_reduce::sum_mean_cpu;

TORCH_LIBRARY_IMPL(treduce, CPU, m) {
  // Floating sums, means and products reduce in logical order (the canonical order), whatever
  // the layout.
  m.impl("sum", &entry_dtype<OpKind::kSum, &sum_mean_cpu, /*kLogical=*/true>);
  m.impl("mean", &entry_dtype<OpKind::kMean, &sum_mean_cpu, /*kLogical=*/true>);
  m.impl("prod", &entry_dtype<OpKind::kProd, &prod_bitwise_cpu, /*kLogical=*/true>);
  m.impl("amax", &entry_dims<OpKind::kAmax, &extreme_cpu>);
  m.impl("amin", &entry_dims<OpKind::kAmin, &extreme_cpu>);
  m.impl("argmax", &entry_arg<OpKind::kArgmax, &extreme_cpu>);
  m.impl("argmin", &entry_arg<OpKind::kArgmin, &extreme_cpu>);
  m.impl("bitwise_and", &entry_opt_dims<OpKind::kAnd, &prod_bitwise_cpu>);
  m.impl("bitwise_or", &entry_opt_dims<OpKind::kOr, &prod_bitwise_cpu>);
  m.impl("bitwise_xor", &entry_opt_dims<OpKind::kXor, &prod_bitwise_cpu>);
}

}  // namespace treduce
