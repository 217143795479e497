// The sum kernels: one instantiation per (input, output) pair of dispatch.h, float8 inputs
// included. Floating results follow the canonical order (canon_config.cuh); integer results are
// exact in any order (int64 with wrap-around) and use the plain kernels, as do floating results
// when treduce._force_launch("plain") asks for the plain float32-accumulator baseline.
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void sum_cuda_launch(const Plan& plan, at::Tensor& out) {
  const CanonMode mode = canon_mode();
  visit_sum_pair<true>(plan.input.scalar_type(), plan.out_dtype, [&](auto ti, auto to) {
    using in_t = typename decltype(ti)::type;
    using out_t = typename decltype(to)::type;
    using acc_t = acc_of<out_t>;
    if constexpr (std::is_integral_v<out_t>) {
      run_cuda<SumOp<acc_t>, in_t, out_t>(plan, out);
    } else {
      if (mode.plain)
        run_cuda<SumOp<acc_t>, in_t, out_t>(plan, out);
      else
        run_canon<CanonSumOp<acc_t>, in_t, out_t>(plan, out, mode.force);
    }
  });
}

}  // namespace treduce
