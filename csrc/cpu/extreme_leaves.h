// The CPU's vector paths for the extremes of contiguous runs of float32 and float64 (and the
// amax/amin of bfloat16), with the scalar fold's results (reduce_cpu.cpp picks the instruction
// set and keeps the scalar fold for the rest). Plain C++ with GCC vector types.
// - argmax/argmin (ArgExtremeOp): each lane keeps the best value it has seen and that value's
//   first index (a later value replaces it only when strictly better), then the lanes meet: the
//   best value, and among the lanes that hold it, the smallest index. That is torch's rule, whose
//   answer is unique (the first index of the largest value, or of the smallest for argmin), so it
//   is the scalar fold's answer too.
// - amax/amin (ExtremeOp): the largest (smallest) value in any order. Where it is not zero and no
//   value is NaN, every value equal to it has its bits, so it is the in-order fold's result bit
//   for bit; a zero (whose sign the order picks among tied +0 and -0) is left to the caller.
// A run that holds a NaN (whose first one wins, payload included) returns false and the caller
// folds it in order.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "vec.h"

namespace treduce {
namespace cpu {

#if defined(__x86_64__)
TREDUCE_VEC_BEGIN
// p[0 .. n), n a positive multiple of W: the first index of the best value into *index and
// true, or false when p holds a NaN.
template <bool kMax, int W, class T>
[[gnu::always_inline]] inline bool arg_simd(const T* p, int n, int64_t* index) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;  // a mask lane's width
  using V = typename VecOf<T, W>::type;
  using Iv = typename VecOf<I, W>::type;
  Iv at;
  for (int l = 0; l < W; ++l) at[l] = I(l);
  V best = load_vec<V>(p);
  Iv idx = at, nan = best != best;
  for (int j = W; j < n; j += W) {
    prefetch_ahead(p + j, W * int(sizeof(T)));
    const V v = load_vec<V>(p + j);
    at += I(W);
    const Iv take = kMax ? v > best : v < best;
    best = take ? v : best;
    idx = take ? at : idx;
    nan |= v != v;
  }
  I any = 0;
  for (int l = 0; l < W; ++l) any |= nan[l];
  if (any) return false;
  T m = best[0];
  for (int l = 1; l < W; ++l) m = (kMax ? best[l] > m : best[l] < m) ? best[l] : m;
  I k = I(n);
  for (int l = 0; l < W; ++l) k = best[l] == m && idx[l] < k ? idx[l] : k;
  *index = int64_t(k);
  return true;
}

// p[0 .. n), n a positive multiple of W: the largest (kMax) or smallest value into *value and
// true, unless p holds a NaN or that value is zero (false). One chain of MAXPS/MINPS at the
// native width: GCC 12 scalarised this loop (a UCOMISS per lane) when it carried two chains or
// vectors of twice the width, having lowered the helper's vectors before inlining it.
template <bool kMax, int W, class T>
[[gnu::always_inline]] inline bool extreme_simd(const T* p, int n, T* value) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  using V = typename VecOf<T, W>::type;
  using Iv = typename VecOf<I, W>::type;
  V a = load_vec<V>(p);
  Iv nan = a != a;
  for (int j = W; j < n; j += W) {
    prefetch_ahead(p + j, W * int(sizeof(T)));
    const V v = load_vec<V>(p + j);
    nan |= v != v;
    a = (kMax ? v > a : v < a) ? v : a;
  }
  I any = 0;
  for (int l = 0; l < W; ++l) any |= nan[l];
  if (any) return false;
  T m = a[0];
  for (int l = 1; l < W; ++l) m = (kMax ? a[l] > m : a[l] < m) ? a[l] : m;
  if (m == T(0)) return false;
  *value = m;
  return true;
}

// The same for bfloat16 (as uint16_t) into a float, on the bits: as 16-bit integers,
// b ^ ((b >> 15) & 0x7fff) orders bfloat16 values as their magnitudes with signs (-0 below +0,
// the one order MAXPS does not keep, but a zero result returns false anyway), so the extreme is
// PMAXSW/PMINSW of those keys (the transform is its own inverse); NaN is a magnitude above
// 0x7f80. L lanes of 16 bits: the native width.
template <bool kMax, int L>
[[gnu::always_inline]] inline bool extreme_bf16_simd(const uint16_t* p, int n, float* value) {
  using Sv = typename VecOf<int16_t, L>::type;
  constexpr int16_t kMag = 0x7fff, kInf = 0x7f80;
  Sv b = load_vec<Sv>(p);
  Sv best = b ^ ((b >> 15) & kMag);
  Sv nan = (b & kMag) > kInf;
  for (int j = L; j < n; j += L) {
    prefetch_ahead(p + j, L * int(sizeof(uint16_t)));
    b = load_vec<Sv>(p + j);
    const Sv key = b ^ ((b >> 15) & kMag);
    nan |= (b & kMag) > kInf;
    best = (kMax ? key > best : key < best) ? key : best;
  }
  int16_t any = 0;
  for (int l = 0; l < L; ++l) any |= nan[l];
  if (any) return false;
  int16_t m = best[0];
  for (int l = 1; l < L; ++l) m = (kMax ? best[l] > m : best[l] < m) ? best[l] : m;
  const uint16_t bits = uint16_t(m ^ ((m >> 15) & kMag));
  if ((bits & kMag) == 0) return false;
  const uint32_t f = uint32_t(bits) << 16;
  std::memcpy(value, &f, sizeof f);
  return true;
}
TREDUCE_VEC_END

template <bool kMax, class T>
__attribute__((target("avx2"))) bool extreme_avx2(const T* p, int n, T* value) {
  return extreme_simd<kMax, 32 / sizeof(T)>(p, n, value);
}
template <bool kMax, class T>
__attribute__((target("avx512f"))) bool extreme_avx512(const T* p, int n, T* value) {
  return extreme_simd<kMax, 64 / sizeof(T)>(p, n, value);
}
template <bool kMax>
__attribute__((target("avx2"))) bool extreme_bf16_avx2(const uint16_t* p, int n, float* value) {
  return extreme_bf16_simd<kMax, 16>(p, n, value);
}
template <bool kMax>
__attribute__((target("avx512f,avx512bw"))) bool extreme_bf16_avx512(const uint16_t* p, int n,
                                                                     float* value) {
  return extreme_bf16_simd<kMax, 32>(p, n, value);
}
template <bool kMax, class T>
__attribute__((target("avx2"))) bool arg_avx2(const T* p, int n, int64_t* index) {
  return arg_simd<kMax, 32 / sizeof(T)>(p, n, index);
}
template <bool kMax, class T>
__attribute__((target("avx512f"))) bool arg_avx512(const T* p, int n, int64_t* index) {
  return arg_simd<kMax, 64 / sizeof(T)>(p, n, index);
}
#endif  // __x86_64__

// argmax (kMax) or argmin of p[0 .. n) (T: float or double; n a multiple of 64 bytes' worth of
// T): the first index of the best value into *index and true; false when p holds a NaN or the
// instruction set has no vector path.
template <bool kMax, class T>
inline bool arg_leaves(Isa isa, const T* p, int n, int64_t* index) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return arg_avx512<kMax>(p, n, index);
  if (isa == Isa::kAvx2) return arg_avx2<kMax>(p, n, index);
#endif
  return false;
}

// amax (kMax) or amin of p[0 .. n) (T: float or double; n a multiple of 64 bytes' worth of T)
// into *value and true; false when p holds a NaN, the result is zero, or the instruction set has
// no vector path.
template <bool kMax, class T>
inline bool extreme_run(Isa isa, const T* p, int n, T* value) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return extreme_avx512<kMax>(p, n, value);
  if (isa == Isa::kAvx2) return extreme_avx2<kMax>(p, n, value);
#endif
  return false;
}
// bfloat16 (as uint16_t), into a float.
template <bool kMax>
inline bool extreme_run(Isa isa, const uint16_t* p, int n, float* value) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return extreme_bf16_avx512<kMax>(p, n, value);
  if (isa == Isa::kAvx2) return extreme_bf16_avx2<kMax>(p, n, value);
#endif
  return false;
}

}  // namespace cpu
}  // namespace treduce
