// reduce_ops.h: the combine operators, shared by the CPU and CUDA backends. Nothing from torch.
//
// An op works on its accumulator type `acc_t` only; the backends convert each loaded element to
// acc_t (exactly, for every op here) before `reduce`, and the finished accumulator to the output
// type after `finalize`. An op provides:
//
//   acc_t identity()                      the value that pads: combine(identity(), a) == a
//   acc_t reduce(acc_t acc, value_t v)    fold one element into a running accumulator; ops with
//                                         kNeedsIndex take (acc, v, r), r the element's logical
//                                         index along the reduced dims; the backends fold the
//                                         elements of one accumulator in increasing r
//   acc_t combine(acc_t a, acc_t b)       merge two partial results; `a` covers earlier elements
//   finalize(acc_t a, int64_t K, int64_t M)  the value to store (before conversion to the
//                                         output type); K reduced elements per output, M outputs
//                                         (both optional: only the means look at them)
//
// value_t is the type each loaded element is converted to (exactly): acc_t, or for the arg ops
// the value part of their (value, index) accumulator.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

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
  TR_HD static acc_t finalize(acc_t a, int64_t = 0, int64_t = 0) { return a; }
};

// The sum times factor = T(M) / T(M * K), as torch's CUDA mean kernel multiplies (aten
// mean_kernel_impl): the plain CUDA baseline (treduce._force_launch("plain")). Means normally use
// CanonMeanOp on both backends.
template <class T>
struct ScaledMeanOp : SumOp<T> {
  TR_HD static T finalize(T a, int64_t K, int64_t M) {
    const T factor = static_cast<T>(M) / static_cast<T>(M * K);
    return a * factor;
  }
};

// Leaves of the canonical order (docs/numerics.md): kCanonLeaf consecutive
// reduced elements at fixed positions. A floating sum or mean folds each leaf in order, merges
// the leaves by a fixed binary tree over leaf index and rounds once at the end, so the result is
// the same for any thread count or launch. Used by both backends (the canonical order).
constexpr int64_t kCanonLeaf = 64;

// Sums of float32 and narrower inputs (value_t float): each element widened to double, the
// leaves folded in double and the tree merged in double; finalize rounds once to float. A leaf of
// float16 values is exact in double (each is a multiple of 2^-24 below 2^16: 64 of them need 46
// bits); otherwise the sum's error is at most (63 + the tree's depth) double roundings, under
// 2^-46 sum |x|, so the float32 result is correctly rounded unless the exact sum lies that close
// to a float32 rounding boundary. Two instructions per element on a GPU (a conversion and DADD)
// in place of TwoSum's seven. Overflow is that of the result: float32 partial
// sums past FLT_MAX that cancel again stay finite. A zero result is +0: the sum starts at +0, and
// double sums of float32 values are multiples of 2^-149, so a nonzero one never rounds to zero.
template <class T>
struct WideSumOp {
  using acc_t = double;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  static constexpr bool kCanonical = true;  // leaves folded in order (the CPU checks it)
  // reduce(acc, v) is combine(acc, v as a double): a kernel may widen a narrower input straight
  // to double (fold, common.cuh), which gives the same exact value.
  static constexpr bool kWidens = true;
  TR_HD static acc_t identity() { return 0.0; }
  TR_HD static acc_t reduce(acc_t acc, T v) { return acc + static_cast<double>(v); }
  TR_HD static acc_t combine(acc_t a, acc_t b) { return a + b; }
  TR_HD static T finalize(acc_t a, int64_t = 0, int64_t = 0) { return static_cast<T>(a); }
};

// The mean: the double sum divided by K in double, rounded once to T.
template <class T>
struct WideMeanOp : WideSumOp<T> {
  TR_HD static T finalize(double a, int64_t K, int64_t = 0) {
    return static_cast<T>(a / static_cast<double>(K));
  }
};

// Sums of float64: a compensated sum. s is the running double sum and c the sum of its rounding
// errors, each found exactly by TwoSum; leaves folded in order, leaf pairs merged by the same
// tree (with TwoSum), s + c rounded once.
template <class T>
struct Compensated {
  T s;
  T c;
};

// Knuth's TwoSum: s = fl(a + b) and e = (a + b) - s exactly, for any a, b (no branches). Needs
// IEEE rounding: no fast-math, no reassociation.
template <class T>
TR_HD void two_sum(T a, T b, T& s, T& e) {
  s = a + b;
  const T bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}

template <class T>
struct CompSumOp {
  using acc_t = Compensated<T>;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  static constexpr bool kCanonical = true;
  TR_HD static acc_t identity() { return {T(0), T(0)}; }
  TR_HD static acc_t reduce(acc_t acc, T v) {
    acc_t r;
    T e;
    two_sum(acc.s, v, r.s, e);
    r.c = acc.c + e;
    return r;
  }
  TR_HD static acc_t combine(acc_t a, acc_t b) {
    acc_t r;
    T e;
    two_sum(a.s, b.s, r.s, e);
    r.c = (a.c + b.c) + e;
    return r;
  }
  // Once s is infinite or NaN the error terms mean nothing (inf - inf): the result is then s,
  // as a plain sum would give.
  TR_HD static bool finite(acc_t a) { return (a.s - a.s) == T(0); }
  // s + c rounded once. A zero result is +0.
  TR_HD static T finalize(acc_t a, int64_t = 0, int64_t = 0) { return finite(a) ? a.s + a.c : a.s; }
};

// The compensated mean: (s + c) / K, rounded once.
template <class T>
struct CompMeanOp : CompSumOp<T> {
  TR_HD static T finalize(Compensated<T> a, int64_t K, int64_t = 0) {
    const T sum = CompSumOp<T>::finite(a) ? a.s + a.c : a.s;
    return sum / static_cast<T>(K);
  }
};

// The canonical sum and mean for a floating accumulator type T (dispatch.h's acc_of): double
// leaves and tree for float (every input of at most 32 bits), compensated doubles for double.
template <class T>
using CanonSumOp = std::conditional_t<sizeof(T) >= 8, CompSumOp<T>, WideSumOp<T>>;
template <class T>
using CanonMeanOp = std::conditional_t<sizeof(T) >= 8, CompMeanOp<T>, WideMeanOp<T>>;

// Ops that fold each leaf strictly in order: the canonical sums and means.
template <class Op, class = void>
struct is_canonical : std::false_type {};
template <class Op>
struct is_canonical<Op, std::void_t<decltype(Op::kCanonical)>>
    : std::bool_constant<Op::kCanonical> {};

// Floating products (float32, float64 and narrower results), in the canonical order of the sums
// (leaves of kCanonLeaf in order, the perfect tree over leaves), so that CPU and CUDA give the
// same bits, with a separate exponent so that nothing overflows or underflows before the end.
// The accumulator is m * 2^e, m a double; where the product is 0, inf or NaN, m is that and e
// is ignored. The rule: NaN if an element is NaN or the elements hold both a zero and an
// infinity; else +-0 if one is zero; else +-inf if one is infinite; else the product of the
// finite values, +-inf only if it overflows T and +-0 only if it underflows T (torch's float32
// products overflow as soon as a partial product does: [1e30, 1e30, 1e-30] is inf there, 1e30
// here). The sign is the product of the signs. Each multiplication rounds m to 53 bits, so a
// product of K values is within about K * 2^-53 of the exact one before the final rounding.
//
// m is scaled back (frexp, exact) only when it leaves [2^-kProdRange, 2^kProdRange]: one factor
// of at most 2^128 or at least 2^-149 (a float) cannot then take it out of double's normal
// range, so every multiplication rounds as it would unscaled, and the bits do not depend on
// where the scaling happened.
struct ScaledProd {
  double m;
  int64_t e;
};

template <class T>
struct CanonProdOp {
  using acc_t = ScaledProd;
  using value_t = T;  // float for float32 and narrower inputs (exact), double for float64
  static constexpr bool kNeedsIndex = false;
  static constexpr bool kCanonical = true;
  static constexpr double kProdRange = 0x1p600;  // |m| in [1 / kProdRange, kProdRange]
  // m * 2^e with |m| in [0.5, 1), exactly; frexp leaves 0, inf and NaN as they are.
  TR_HD static acc_t normal(double m, int64_t e) {
    int k = 0;
    const double f = frexp(m, &k);
    return {f, e + k};
  }
  TR_HD static acc_t identity() { return {0.5, 1}; }
  TR_HD static acc_t reduce(acc_t acc, T v) {
    if constexpr (sizeof(T) <= 4) {
      const double m = acc.m * static_cast<double>(v);
      const double a = m < 0 ? -m : m;
      if (a > kProdRange || a < 1 / kProdRange) return normal(m, acc.e);  // 0 and inf too
      return {m, acc.e};
    } else {
      return combine(acc, normal(v, 0));  // a double's own exponent is split off first
    }
  }
  TR_HD static acc_t combine(acc_t a, acc_t b) {
    const acc_t x = normal(a.m, a.e), y = normal(b.m, b.e);
    return normal(x.m * y.m, x.e + y.e);
  }
  TR_HD static T finalize(acc_t a, int64_t = 0, int64_t = 0) {
    a = normal(a.m, a.e);
    if (!(a.m - a.m == 0.0) || a.m == 0.0) return static_cast<T>(a.m);  // 0, inf, NaN
    // Past +-4096 the result is 0 or inf for every T; ldexp rounds once (into double's
    // subnormals if it must), and the cast to float rounds a value that double holds exactly.
    const int64_t e = a.e < -4096 ? -4096 : a.e > 4096 ? 4096 : a.e;
    return static_cast<T>(ldexp(a.m, static_cast<int>(e)));
  }
};

// Integer products (int64 with wrap-around: exact, so any order gives the same bits).
template <class T>
struct ProdOp {
  using acc_t = T;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() { return acc_t(1); }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return acc * v; }
  TR_HD static acc_t combine(acc_t a, acc_t b) { return a * b; }
  TR_HD static acc_t finalize(acc_t a, int64_t = 0, int64_t = 0) { return a; }
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
  TR_HD static acc_t finalize(acc_t a, int64_t = 0, int64_t = 0) { return a; }
};
template <class T>
using BitAndOp = BitOp<T, 0>;
template <class T>
using BitOrOp = BitOp<T, 1>;
template <class T>
using BitXorOp = BitOp<T, 2>;

// The value that loses every comparison for a max (kMax) or a min reduction.
template <class T, bool kMax>
TR_HD T worst_value() {
  if constexpr (std::numeric_limits<T>::has_infinity)
    return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else
    return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

// Max (kMax) or min with NaN propagation: once a NaN is seen it wins, as in torch.amax/amin.
// Written as one select (take b when b is NaN or better, unless a is NaN) so that the GPU runs it
// without branches.
template <class T, bool kMax>
struct ExtremeOp {
  using acc_t = T;
  using value_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() { return worst_value<T, kMax>(); }
  TR_HD static acc_t combine(acc_t a, acc_t b) {
    const bool better = kMax ? b > a : b < a;
    return !is_nan(a) && (better || is_nan(b)) ? b : a;
  }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return combine(acc, v); }
  TR_HD static acc_t finalize(acc_t a, int64_t = 0, int64_t = 0) { return a; }
};
template <class T>
using MaxOp = ExtremeOp<T, true>;
template <class T>
using MinOp = ExtremeOp<T, false>;

// argmax (kMax) / argmin: the index of the best value; the first NaN wins over any number, and
// among equal values the lowest index wins. combine() depends only on the two (value, index)
// pairs, never on which came first, so any reduction tree gives torch's answer. reduce() is the
// per-element fast path: both backends fold the elements of one accumulator in increasing r, so
// an equal value or a later NaN never replaces the one already held.
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
    const bool better = kMax ? b.value > a.value : b.value < a.value;
    const bool earlier = b.index < a.index;
    const bool take_b = an ? (bn && earlier) : (bn || better || (b.value == a.value && earlier));
    return take_b ? b : a;
  }
  TR_HD static acc_t reduce(acc_t acc, T v, int64_t r) {  // r above every index in acc
    const bool better = kMax ? v > acc.value : v < acc.value;
    // acc.index > r only for the identity: the first element is taken even when it equals the
    // identity's value (-inf for argmax, the lowest integer, ...).
    const bool take = !is_nan(acc.value) && (better || is_nan(v) || acc.index > r);
    return take ? acc_t{v, r} : acc;
  }
  TR_HD static int64_t finalize(acc_t a, int64_t = 0, int64_t = 0) { return a.index; }
};
template <class T>
using ArgMaxOp = ArgExtremeOp<T, true>;
template <class T>
using ArgMinOp = ArgExtremeOp<T, false>;

}  // namespace treduce
