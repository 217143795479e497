// The bitwise and/or/xor kernels. Only the bits matter, so every integer dtype (and bool, whose
// values 0 and 1 stay 0 and 1) runs as the unsigned type of its width: four widths, three ops.
// The accumulator is 32 bits wide (64 for 8-byte values), the width a warp shuffle moves.
#include <cstdint>
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_ops.h"
#include "binding.cuh"

namespace treduce {
namespace {

template <int kBytes>
struct unsigned_of;
template <>
struct unsigned_of<1> {
  using type = uint8_t;
};
template <>
struct unsigned_of<2> {
  using type = uint16_t;
};
template <>
struct unsigned_of<4> {
  using type = uint32_t;
};
template <>
struct unsigned_of<8> {
  using type = uint64_t;
};

template <class U>
void run_bits(const Plan& plan, at::Tensor& out) {
  using acc_t = std::conditional_t<sizeof(U) == 8, uint64_t, uint32_t>;
  switch (plan.kind) {
    case OpKind::kAnd:
      return run_cuda<BitAndOp<acc_t>, U, U>(plan, out);
    case OpKind::kOr:
      return run_cuda<BitOrOp<acc_t>, U, U>(plan, out);
    default:
      return run_cuda<BitXorOp<acc_t>, U, U>(plan, out);
  }
}

}  // namespace

void bitwise_cuda_launch(const Plan& plan, at::Tensor& out) {
  visit_dtype(plan.input.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (std::is_integral_v<T>) {
      run_bits<typename unsigned_of<sizeof(T)>::type>(plan, out);
    } else {
      TORCH_INTERNAL_ASSERT(false, "treduce: floating-point input reached a bitwise kernel");
    }
  });
}

}  // namespace treduce
