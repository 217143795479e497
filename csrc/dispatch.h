// dispatch.h: the dtype lists, in one place for both backends.
//
//   visit_dtype(t, f)          f(tag<T>) for each supported input dtype (at:: storage types)
//   visit_sum_pair(in, out, f) f(tag<In>, tag<Out>) for each (input, output) pair a sum kernel is
//                              instantiated for; native_sum_pair() says which pairs those are
//   acc_of<T>                  the accumulator: double for double, float for float/half/bfloat16,
//                              int64_t for every integer type and bool
#pragma once
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <type_traits>

namespace treduce {

template <class T>
struct tag {
  using type = T;
};

template <class T>
using acc_of = std::conditional_t<
    std::is_same_v<T, double>, double,
    std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, c10::Half> ||
                           std::is_same_v<T, c10::BFloat16>,
                       float, int64_t>>;

template <class F>
void visit_dtype(c10::ScalarType t, F&& f) {
  switch (t) {
    case c10::kFloat: return f(tag<float>{});
    case c10::kDouble: return f(tag<double>{});
    case c10::kHalf: return f(tag<c10::Half>{});
    case c10::kBFloat16: return f(tag<c10::BFloat16>{});
    case c10::kChar: return f(tag<int8_t>{});
    case c10::kShort: return f(tag<int16_t>{});
    case c10::kInt: return f(tag<int32_t>{});
    case c10::kLong: return f(tag<int64_t>{});
    case c10::kByte: return f(tag<uint8_t>{});
    case c10::kBool: return f(tag<bool>{});
    default: TORCH_CHECK_TYPE(false, "treduce: unsupported dtype ", t);
  }
}

// The sum kernels' (input, output) pairs: same dtype; integer or bool to int64; half or bfloat16
// to float; float to double. Anything else is converted to the output dtype first (plan.cpp).
inline bool native_sum_pair(c10::ScalarType in, c10::ScalarType out) {
  if (in == out) return true;
  if (out == c10::kLong) return c10::isIntegralType(in, /*includeBool=*/true);
  if (out == c10::kFloat) return in == c10::kHalf || in == c10::kBFloat16;
  if (out == c10::kDouble) return in == c10::kFloat;
  return false;
}

template <class F>
void visit_sum_pair(c10::ScalarType in, c10::ScalarType out, F&& f) {
  TORCH_CHECK(native_sum_pair(in, out), "treduce: no sum kernel for ", in, " -> ", out);
  visit_dtype(in, [&](auto ti) {
    using I = typename decltype(ti)::type;
    if (in == out) return f(ti, ti);
    if constexpr (std::is_integral_v<I>) {
      if (out == c10::kLong) return f(ti, tag<int64_t>{});
    }
    if constexpr (std::is_same_v<I, c10::Half> || std::is_same_v<I, c10::BFloat16>) {
      if (out == c10::kFloat) return f(ti, tag<float>{});
    }
    if constexpr (std::is_same_v<I, float>) {
      if (out == c10::kDouble) return f(ti, tag<double>{});
    }
  });
}

}  // namespace treduce
