// reduce_ops.h: the combine operators, shared by the CPU and CUDA backends. Nothing from torch.
//
// An op works on its accumulator type `acc_t` only; the backends convert each loaded element to
// acc_t (exactly, for every op here) before `reduce`, and the finished accumulator to the output
// type after `finalize`. An op provides:
//
//   acc_t identity()                      the value that pads: combine(identity(), a) == a
//   acc_t reduce(acc_t acc, value_t v)    fold one element into a running accumulator; ops with
//                                         kNeedsIndex take (acc, v, r), r the element's logical
//                                         index along the reduced dims
//   acc_t combine(acc_t a, acc_t b)       merge two partial results; `a` covers earlier elements
//   finalize(acc_t a, int64_t K)          the value to store (before conversion to the output
//                                         type); K is the number of reduced elements
//
// value_t is the type each loaded element is converted to (exactly): acc_t, or for the arg ops
// the value part of their (value, index) accumulator.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "geometry.h"  // TR_HD

namespace treduce {

template <class T>
TR_HD bool is_nan(T v) {
  return v != v;  // false for every integer type
}

template <class T>
struct SumOp {
  using acc_t = T;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() { return acc_t(0); }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return acc + v; }
  TR_HD static acc_t combine(acc_t a, acc_t b) { return a + b; }
  TR_HD static acc_t finalize(acc_t a, int64_t = 0) { return a; }
};

// The sum divided by the count (a true division, rounded once in the accumulator type).
template <class T>
struct MeanOp : SumOp<T> {
  TR_HD static T finalize(T a, int64_t K) {
    return static_cast<T>(static_cast<double>(a) / static_cast<double>(K));
  }
};

template <class T>
struct ProdOp {
  using acc_t = T;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() { return acc_t(1); }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return acc * v; }
  TR_HD static acc_t combine(acc_t a, acc_t b) { return a * b; }
  TR_HD static acc_t finalize(acc_t a, int64_t = 0) { return a; }
};

// Bitwise reductions of integer (int64 accumulator) values; the identity is all ones for AND.
template <class T, int kKind>  // 0: and, 1: or, 2: xor
struct BitOp {
  using acc_t = T;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() { return kKind == 0 ? ~acc_t(0) : acc_t(0); }
  TR_HD static acc_t combine(acc_t a, acc_t b) {
    return kKind == 0 ? (a & b) : kKind == 1 ? (a | b) : (a ^ b);
  }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return combine(acc, v); }
  TR_HD static acc_t finalize(acc_t a, int64_t = 0) { return a; }
};
template <class T> using BitAndOp = BitOp<T, 0>;
template <class T> using BitOrOp = BitOp<T, 1>;
template <class T> using BitXorOp = BitOp<T, 2>;

// The value that loses every comparison for a max (kMax) or a min reduction.
template <class T, bool kMax>
TR_HD T worst_value() {
  if constexpr (std::numeric_limits<T>::has_infinity)
    return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else
    return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

// Max (kMax) or min with NaN propagation: once a NaN is seen it wins, as in torch.amax/amin.
template <class T, bool kMax>
struct ExtremeOp {
  using acc_t = T;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() { return worst_value<T, kMax>(); }
  TR_HD static acc_t combine(acc_t a, acc_t b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (kMax ? b > a : b < a) ? b : a;
  }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return combine(acc, v); }
  TR_HD static acc_t finalize(acc_t a, int64_t = 0) { return a; }
};
template <class T> using MaxOp = ExtremeOp<T, true>;
template <class T> using MinOp = ExtremeOp<T, false>;

// argmax (kMax) / argmin: the index of the best value; the first NaN wins over any number, and
// among equal values the lowest index wins. combine() depends only on the two (value, index)
// pairs, never on which came first, so any reduction tree gives torch's answer.
template <class T>
struct ValueIndex {
  T value;
  int64_t index;
};

template <class T, bool kMax>
struct ArgExtremeOp {
  using value_t = T;
  using acc_t = ValueIndex<T>;
  static constexpr bool kNeedsIndex = true;
  TR_HD static acc_t identity() { return {worst_value<T, kMax>(), INT64_MAX}; }
  TR_HD static acc_t combine(acc_t a, acc_t b) {
    const bool an = is_nan(a.value), bn = is_nan(b.value);
    if (an || bn) {
      if (an && bn) return a.index <= b.index ? a : b;
      return an ? a : b;
    }
    if (a.value == b.value) return a.index <= b.index ? a : b;
    return (kMax ? b.value > a.value : b.value < a.value) ? b : a;
  }
  TR_HD static acc_t reduce(acc_t acc, T v, int64_t r) { return combine(acc, acc_t{v, r}); }
  TR_HD static int64_t finalize(acc_t a, int64_t = 0) { return a.index; }
};
template <class T> using ArgMaxOp = ArgExtremeOp<T, true>;
template <class T> using ArgMinOp = ArgExtremeOp<T, false>;

}  // namespace treduce
