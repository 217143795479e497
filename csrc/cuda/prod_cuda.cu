// The prod kernels: the sum's (input, output) pairs without float8 (torch has no fp8 prod) and
// without the floating widenings (a floating dtype= is a conversion first; dispatch.h).
// Floating results follow the canonical order with the scaled accumulator (CanonProdOp): the
// CPU's bits, and no overflow before the result's own. Integer results are exact in any order
// (int64 with wrap-around) and use the plain kernels.
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void prod_cuda_launch(const Plan& plan, at::Tensor& out) {
  constexpr bool kWiden = widens_float(OpKind::kProd);
  visit_sum_pair<false, kWiden>(plan.input.scalar_type(), plan.out_dtype, [&](auto ti, auto to) {
    using in_t = typename decltype(ti)::type;
    using out_t = typename decltype(to)::type;
    using acc_t = acc_of<out_t>;
    if constexpr (std::is_integral_v<out_t>)
      run_cuda<ProdOp<acc_t>, in_t, out_t>(plan, out);
    else
      run_canon<CanonProdOp<acc_t>, in_t, out_t>(plan, out, canon_mode().force);
  });
}

}  // namespace treduce
