// The argmax and argmin kernels: (value, index) accumulators over the input dtype (bool is
// rejected by the plan, as in torch); the output is int64. The plan keeps the reduced dims in
// logical order, so the kernels' reduced index r is torch's index.
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {

void arg_cuda_launch(const Plan& plan, at::Tensor& out) {
  const bool is_max = plan.kind == OpKind::kArgmax;
  visit_dtype(plan.input.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (std::is_same_v<T, bool>) {
      TORCH_INTERNAL_ASSERT(false, "treduce: bool input reached an arg kernel");
    } else if (is_max) {
      run_cuda<ArgMaxOp<acc_of<T>>, T, int64_t>(plan, out);
    } else {
      run_cuda<ArgMinOp<acc_of<T>>, T, int64_t>(plan, out);
    }
  });
}

}  // namespace treduce
