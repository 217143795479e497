// The amax and amin kernels: one instantiation per supported dtype, float8 included; the output
// keeps the input dtype.
#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void extreme_cuda_launch(const Plan& plan, at::Tensor& out) {
  const bool is_max = plan.kind == OpKind::kAmax;
  visit_dtype<true>(plan.input.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    if (is_max)
      run_cuda<MaxOp<acc_of<T>>, T, T>(plan, out);
    else
      run_cuda<MinOp<acc_of<T>>, T, T>(plan, out);
  });
}

}  // namespace treduce
