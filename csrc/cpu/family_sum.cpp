// sum and mean: one unit of the CPU backend (families.h).
#include "families.h"
#include "reduce_cpu.h"

namespace treduce {
namespace cpu_reduce {

void sum_mean_cpu(const Plan& plan, at::Tensor& out) {
  if (plan.kind == OpKind::kSum)
    with_dtype<CanonSumOp, SumOp>(plan, out);
  else
    with_dtype<CanonMeanOp, SumOp>(plan, out);
}

}  // namespace cpu_reduce
}  // namespace treduce
