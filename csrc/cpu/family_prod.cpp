// prod and the bitwise ops: one unit of the CPU backend (families.h).
#include "families.h"
#include "reduce_cpu.h"

namespace treduce {
namespace cpu_reduce {

void prod_bitwise_cpu(const Plan& plan, at::Tensor& out) {
  switch (plan.kind) {
    case OpKind::kProd:
      return with_dtype<CanonProdOp, ProdOp, widens_float(OpKind::kProd)>(plan, out);
    case OpKind::kAnd:
      return bitwise<BitAndOp>(plan, out);
    case OpKind::kOr:
      return bitwise<BitOrOp>(plan, out);
    default:
      return bitwise<BitXorOp>(plan, out);
  }
}

}  // namespace cpu_reduce
}  // namespace treduce
