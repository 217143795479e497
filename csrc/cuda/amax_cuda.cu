// The amax kernels: one instantiation per supported dtype; the output keeps the input dtype.
#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void amax_cuda_launch(const Plan& plan, at::Tensor& out) {
  visit_dtype(plan.input.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    run_cuda<MaxOp<acc_of<T>>, T, T>(plan, out);
  });
}

}  // namespace treduce
