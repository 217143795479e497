// The mean kernels: the sum's pairs with a floating-point result (the plan rejects integer results
// and converts other inputs first), float8 inputs included. The canonical sum divided by K in
// double and rounded once (CanonMeanOp, as on the CPU); _force_launch("plain") gives
// the plain kernels with torch's scale factor (ScaledMeanOp) instead.
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void mean_cuda_launch(const Plan& plan, at::Tensor& out) {
  const CanonMode mode = canon_mode();
  visit_sum_pair<true>(plan.input.scalar_type(), plan.out_dtype, [&](auto ti, auto to) {
    using in_t = typename decltype(ti)::type;
    using out_t = typename decltype(to)::type;
    if constexpr (std::is_integral_v<out_t>) {
      TORCH_INTERNAL_ASSERT(false, "treduce.mean: integer result dtype reached the kernel");
    } else if (mode.plain) {
      run_cuda<ScaledMeanOp<acc_of<out_t>>, in_t, out_t>(plan, out);
    } else {
      run_canon<CanonMeanOp<acc_of<out_t>>, in_t, out_t>(plan, out, mode.force);
    }
  });
}

}  // namespace treduce
