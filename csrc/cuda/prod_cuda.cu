// The prod kernels: the sum's (input, output) pairs, without float8 (torch has no fp8 prod).
#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void prod_cuda_launch(const Plan& plan, at::Tensor& out) {
  visit_sum_pair(plan.input.scalar_type(), plan.out_dtype, [&](auto ti, auto to) {
    using in_t = typename decltype(ti)::type;
    using out_t = typename decltype(to)::type;
    run_cuda<ProdOp<acc_of<out_t>>, in_t, out_t>(plan, out);
  });
}

}  // namespace treduce
