// amax, amin, argmax and argmin: one unit of the CPU backend (families.h).
#include "families.h"
#include "reduce_cpu.h"

namespace treduce {
namespace cpu_reduce {

void extreme_cpu(const Plan& plan, at::Tensor& out) {
  switch (plan.kind) {
    case OpKind::kAmax:
      return same_dtype<MaxOp, true>(plan, out);
    case OpKind::kAmin:
      return same_dtype<MinOp, true>(plan, out);
    case OpKind::kArgmax:
      return index_of<ArgMaxOp>(plan, out);
    default:
      return index_of<ArgMinOp>(plan, out);
  }
}

}  // namespace cpu_reduce
}  // namespace treduce
