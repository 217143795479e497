// The sum kernels: one instantiation per (input, output) pair of dispatch.h, float8 inputs included.
#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void sum_cuda_launch(const Plan& plan, at::Tensor& out) {
  visit_sum_pair<true>(plan.input.scalar_type(), plan.out_dtype, [&](auto ti, auto to) {
    using in_t = typename decltype(ti)::type;
    using out_t = typename decltype(to)::type;
    run_cuda<SumOp<acc_of<out_t>>, in_t, out_t>(plan, out);
  });
}

}  // namespace treduce
