// dispatch.h: the dtype lists, in one place for both backends.
//
//   visit_dtype<fp8>(t, f)     f(tag<T>) for each supported input dtype (at:: storage types);
//                              the float8 types too when fp8 is true
//   visit_sum_pair<fp8, widen>(in, out, f)  f(tag<In>, tag<Out>) for each (input, output) pair
//                              a sum, mean or prod kernel is instantiated for; native_sum_pair()
//                              says which pairs those are
//   visit_sum_out<In, widen>(out, f)  f(tag<Out>) for one input type's pairs
//   acc_of<T>                  the accumulator: double for double, float for float/half/bfloat16
//                              and float8, int64_t for every integer type and bool
#pragma once
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e5m2.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <type_traits>

#include "op_list.h"

namespace treduce {

template <class T>
struct tag {
  using type = T;
};

template <class T>
constexpr bool is_fp8_v =
    std::is_same_v<T, c10::Float8_e4m3fn> || std::is_same_v<T, c10::Float8_e5m2>;

template <class T>
constexpr bool is_low_float_v =
    std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16> || is_fp8_v<T>;

template <class T>
using acc_of = std::conditional_t<
    std::is_same_v<T, double>, double,
    std::conditional_t<std::is_same_v<T, float> || is_low_float_v<T>, float, int64_t>>;

// The integer storage types (bool aside) in one list: the dispatch below, and the kernel units
// that instantiate the integer families (csrc/cuda/units/*_int.cu, bitwise.cu), expand X over it.
#define TREDUCE_INTEGER_TYPES(X) X(uint8_t) X(int8_t) X(int16_t) X(int32_t) X(int64_t)

template <bool kWithFp8 = false, class F>
void visit_dtype(c10::ScalarType t, F&& f) {
  if constexpr (kWithFp8) {
    if (t == c10::kFloat8_e4m3fn) return f(tag<c10::Float8_e4m3fn>{});
    if (t == c10::kFloat8_e5m2) return f(tag<c10::Float8_e5m2>{});
  }
  switch (t) {
    case c10::kFloat:
      return f(tag<float>{});
    case c10::kDouble:
      return f(tag<double>{});
    case c10::kHalf:
      return f(tag<c10::Half>{});
    case c10::kBFloat16:
      return f(tag<c10::BFloat16>{});
#define TREDUCE_INTEGER_CASE(T)            \
  case c10::CppTypeToScalarType<T>::value: \
    return f(tag<T>{});
      TREDUCE_INTEGER_TYPES(TREDUCE_INTEGER_CASE)
#undef TREDUCE_INTEGER_CASE
    case c10::kBool:
      return f(tag<bool>{});
    default:
      TORCH_CHECK_TYPE(false, "treduce: unsupported dtype ", t);
  }
}

// The sum/mean/prod kernels' (input, output) pairs: same dtype; integer or bool to int64; and,
// where widen_float (widens_float: sum and mean), half, bfloat16 or float8 to float and float
// to double.
// Anything else is converted to the output dtype first (plan.cpp), which gives the same bits:
// the conversion is exact and the canonical order does not depend on the input dtype. prod takes
// its floating dtype= pairs that way: a rare call, whose kernels were 60 canonical-product
// instantiations and 1.2 MB of the library.
constexpr bool widens_float(OpKind kind) { return kind != OpKind::kProd; }

inline bool native_sum_pair(c10::ScalarType in, c10::ScalarType out, bool widen_float = true) {
  if (in == out) return true;
  if (out == c10::kLong) return c10::isIntegralType(in, /*includeBool=*/true);
  if (!widen_float) return false;
  if (out == c10::kFloat)
    return in == c10::kHalf || in == c10::kBFloat16 || in == c10::kFloat8_e4m3fn ||
           in == c10::kFloat8_e5m2;
  if (out == c10::kDouble) return in == c10::kFloat;
  return false;
}

// f(tag<Out>) for the output dtype `out` of input type I's kernel pair (I, out); a TypeError
// where there is none.
template <class I, bool kWidenFloat = true, class F>
void visit_sum_out(c10::ScalarType out, F&& f) {
  if constexpr (!is_fp8_v<I>) {  // float8 results are never float8
    if (out == c10::CppTypeToScalarType<I>::value) return f(tag<I>{});
  }
  if constexpr (std::is_integral_v<I>) {
    if (out == c10::kLong) return f(tag<int64_t>{});
  }
  if constexpr (kWidenFloat && is_low_float_v<I>) {
    if (out == c10::kFloat) return f(tag<float>{});
  }
  if constexpr (kWidenFloat && std::is_same_v<I, float>) {
    if (out == c10::kDouble) return f(tag<double>{});
  }
  TORCH_CHECK_TYPE(false, "treduce: no kernel for ", c10::CppTypeToScalarType<I>::value, " -> ",
                   out);
}

template <bool kWithFp8 = false, bool kWidenFloat = true, class F>
void visit_sum_pair(c10::ScalarType in, c10::ScalarType out, F&& f) {
  TORCH_CHECK_TYPE(native_sum_pair(in, out, kWidenFloat), "treduce: no kernel for ", in, " -> ",
                   out);
  visit_dtype<kWithFp8>(in, [&](auto ti) {
    visit_sum_out<typename decltype(ti)::type, kWidenFloat>(out, [&](auto to) { f(ti, to); });
  });
}

}  // namespace treduce
