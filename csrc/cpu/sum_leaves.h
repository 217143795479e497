// The CPU's vector paths for sums in the canonical order (docs/numerics.md), with the in-order
// fold's bits: exact leaves of float32 and bfloat16 (a leaf whose exponent range makes every
// order of addition exact, summed in vector lanes), column tiles (neighbouring outputs side by
// side, each folding its leaf in order, one output a lane) and float64's compensated leaves (one
// leaf a lane, in order). Plain C++ with GCC vector types; reduce_cpu.cpp picks the instruction
// set and keeps the scalar fold for the rest.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "../reduce_ops.h"
#include "vec.h"

namespace treduce {
namespace cpu {

constexpr int kLeaf = int(kCanonLeaf);

// Leaves whose sum is exact in any order: then the in-order fold's bits are those of any other
// fold, so the leaf is summed in vector lanes (where the CPU has AVX2 or AVX-512; otherwise every
// leaf is folded in order). A value of a type with m mantissa bits and biased exponent E >= 1 is a
// multiple of 2^(E - bias - m) (subnormals: of the E = 1 unit) below 2^(E - bias + 1), so a sum
// of k such values, in any order and at every step, is a multiple of the smallest unit below
// 2^(Emax - Emin + m + 1 + log2 k) of them: exact in a format of p significant bits when
// Emax - Emin <= p - m - 1 - log2 k (Emin over the nonzero values). A leaf's 64 values in double
// (p = 53): float32 (m = 23) within 23 binades (randn data: nearly every leaf), bfloat16 (m = 7)
// within 39. Infinities and NaN (whose payloads an order may change) and wider leaves return
// false and are folded in order by the caller. So do leaves whose largest exponent exceeds
// kTopExp: a sum in a format as wide as the input's exponent (bfloat16 in float32 lanes) is exact
// only while no partial sum overflows, and k values of biased exponent at most E sum to less
// than 2^(E - bias + 1 + log2 k).
template <int kMaxRange, int kExpBits, uint32_t kTopExp>
inline bool exponent_range_within(uint32_t emax, uint32_t emin) {
  static_assert(kTopExp < (1u << kExpBits) - 1, "infinities and NaN never pass");
  return emax <= kTopExp && (emax <= emin || emax - emin <= uint32_t(kMaxRange));
}
// The largest range for sums of k = 2^kLogTerms values of m mantissa bits in p significant bits.
constexpr int max_exact_range(int p, int m, int kLogTerms) { return p - m - 1 - kLogTerms; }

#if defined(__x86_64__)
TREDUCE_VEC_BEGIN

// The sum of a vector's W double lanes, in halves (log2 W additions deep); the caller's sums are
// exact, so any order gives the same bits.
template <int W>
[[gnu::always_inline]] inline double lane_sum(typename VecOf<double, W>::type v) {
  if constexpr (W == 1) {
    return v[0];
  } else {
    typename VecOf<double, W / 2>::type lo, hi;
    halves(v, lo, hi);
    return lane_sum<W / 2>(lo + hi);
  }
}

// The sums of eight vectors of eight double lanes (v[l]: leaf l's partial sums) into out[0 .. 8):
// pairs of vectors are folded into one whose halves are their lane groups' sums, until one
// vector holds one lane per leaf: three stages of two shuffles and an addition per pair, instead
// of a horizontal sum three additions deep per leaf. The caller's sums are exact, so any order
// gives the same bits.
[[gnu::always_inline]] inline void leaf_sums8(const VecOf<double, 8>::type* v, double* out) {
  using V = VecOf<double, 8>::type;
  V t[4], u[2];
  for (int k = 0; k < 4; ++k)  // lanes 0-3: leaf 2k, 4-7: leaf 2k + 1
    t[k] = __builtin_shufflevector(v[2 * k], v[2 * k + 1], 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(v[2 * k], v[2 * k + 1], 4, 5, 6, 7, 12, 13, 14, 15);
  for (int k = 0; k < 2; ++k)  // two lanes a leaf, leaves 4k .. 4k + 3
    u[k] = __builtin_shufflevector(t[2 * k], t[2 * k + 1], 0, 1, 4, 5, 8, 9, 12, 13) +
           __builtin_shufflevector(t[2 * k], t[2 * k + 1], 2, 3, 6, 7, 10, 11, 14, 15);
  const V w = __builtin_shufflevector(u[0], u[1], 0, 2, 4, 6, 8, 10, 12, 14) +
              __builtin_shufflevector(u[0], u[1], 1, 3, 5, 7, 9, 11, 13, 15);
  std::memcpy(out, &w, sizeof w);
}

// The exponent range of magnitudes seen so far, as unsigned bit patterns with the sign cleared
// (ordered as the magnitudes): the largest, and the smallest nonzero one less one (a zero wraps
// to the top and drops out of the minimum). U: W lanes of uint32_t (float32) or uint16_t
// (bfloat16); kShift: the mantissa bits below the exponent.
template <class U, int W, int kShift>
struct RangeLanes {
  using Elem = std::remove_reference_t<decltype(U{}[0])>;
  static constexpr Elem kAbs = Elem(~Elem(0)) >> 1;
  U amax{}, amin1 = ~U{};
  // The largest (kMax) or smallest of v's N lanes, in halves.
  template <bool kMax, int N, class V>
  [[gnu::always_inline]] static Elem fold_lanes(V v) {
    if constexpr (N == 1) {
      return v[0];
    } else {
      typename VecOf<Elem, N / 2>::type lo, hi;
      halves(v, lo, hi);
      return fold_lanes<kMax, N / 2>(kMax ? (lo > hi ? lo : hi) : (lo < hi ? lo : hi));
    }
  }
  [[gnu::always_inline]] void see(U bits) {
    const U a = bits & kAbs, a1 = a - Elem(1);
    amax = a > amax ? a : amax;
    amin1 = a1 < amin1 ? a1 : amin1;
  }
  // Whether the biased exponents (a subnormal counts as 1) lie within kMaxRange binades, the
  // largest at most kTopExp.
  template <int kMaxRange, uint32_t kTopExp = 254>
  bool within() const {
    const uint32_t a = fold_lanes<true, W>(amax), b = fold_lanes<false, W>(amin1);
    const uint32_t emin = b == Elem(~Elem(0)) ? 0xffu : std::max<uint32_t>((b + 1) >> kShift, 1);
    return exponent_range_within<kMaxRange, 8, kTopExp>(a >> kShift, emin);
  }
};

// kLeaves whole float32 leaves (p[0 .. kLeaves*kLeaf)) whose exponent range, taken over all of
// them, allows any order in double: each leaf's exact sum into out[l], and true; else false.
// The range over several leaves contains each leaf's, so a batch that passes is exact leaf by
// leaf; the caller retries one that fails a leaf at a time. W float lanes a step, widened to
// double.
template <int W, int kLeaves>
[[gnu::always_inline]] inline bool exact_f32_simd(const float* p, double* out) {
  using u32v = typename VecOf<uint32_t, W>::type;
  using f32v = typename VecOf<float, W>::type;
  using f64v = typename VecOf<double, W>::type;  // two registers: two chains of additions
  RangeLanes<u32v, W, 23> range;
  double s[kLeaves];
  for (int l = 0; l < kLeaves; ++l) {
    const float* q = p + l * kLeaf;
    prefetch_ahead(q, kLeaf * sizeof(float));
    f64v acc = {};
    for (int j = 0; j < kLeaf; j += W) {
      range.see(load_vec<u32v>(q + j));
      acc += __builtin_convertvector(load_vec<f32v>(q + j), f64v);
    }
    s[l] = lane_sum<W>(acc);
  }
  if (!range.template within<max_exact_range(53, 23, __builtin_ctz(kLeaf))>()) return false;
  for (int l = 0; l < kLeaves; ++l) out[l] = s[l];
  return true;
}

// The same for bfloat16 leaves (as uint16_t): the range is taken on 2W 16-bit lanes, and each
// leaf is summed in W lanes of Acc, kLeaf / W values a lane, then in double: float32 lanes (the
// fast tier, exact within the tighter range that 24 bits allow) or double lanes (exact within
// the double bound). A bfloat16 is a float's top half, so 2W values read as W 32-bit lanes are
// W floats shifted up (the even ones) and W floats masked (the odd ones).
template <class Acc, int W, int kLeaves>
[[gnu::always_inline]] inline bool exact_bf16_simd(const uint16_t* p, double* out) {
  using u16v = typename VecOf<uint16_t, 2 * W>::type;
  using u32v = typename VecOf<uint32_t, W>::type;
  using f32v = typename VecOf<float, W>::type;
  using accv = typename VecOf<Acc, W>::type;
  using f64v = typename VecOf<double, W>::type;
  // float32 lanes: kLeaf / W values each, then the double sum of all kLeaf (a looser bound);
  // double lanes: all kLeaf values meet in double.
  constexpr bool kFloatLanes = std::is_same_v<Acc, float>;
  constexpr int kMaxRange = kFloatLanes ? max_exact_range(24, 7, __builtin_ctz(kLeaf / W))
                                        : max_exact_range(53, 7, __builtin_ctz(kLeaf));
  // float32 lanes share bfloat16's exponent: kLeaf / W values of a lane overflow it from
  // 2^(128 - log2(kLeaf / W)) on (a leaf of +-2.5e38 and +-1e38 summed to NaN); double lanes
  // cannot overflow.
  constexpr uint32_t kTopExp = kFloatLanes ? 254 - __builtin_ctz(kLeaf / W) : 254;
  // With AVX-512, a batch of eight leaves meets in leaf_sums8 (bfloat16 only: AVX2's batches
  // and float32 leaves measured slower that way; docs/perf-log.md 2026-12-05).
  using f64x8 = typename VecOf<double, 8>::type;
  constexpr bool kTransposed = kLeaves == 8 && W == 16;
  RangeLanes<u16v, 2 * W, 7> range;
  double s[kLeaves];
  f64x8 lanes[kTransposed ? kLeaves : 1];
  for (int l = 0; l < kLeaves; ++l) {
    const uint16_t* q = p + l * kLeaf;
    prefetch_ahead(q, kLeaf * sizeof(uint16_t));
    accv acc[2] = {};
    for (int j = 0; j < kLeaf; j += 2 * W) {
      range.see(load_vec<u16v>(q + j));
      const u32v pairs = load_vec<u32v>(q + j);
      const u32v even = pairs << 16, odd = pairs & 0xffff0000u;
      acc[0] += __builtin_convertvector(load_vec<f32v>(&even), accv);
      acc[1] += __builtin_convertvector(load_vec<f32v>(&odd), accv);
    }
    const f64v d = __builtin_convertvector(acc[0] + acc[1], f64v);
    if constexpr (kTransposed) {
      f64x8 lo, hi;
      halves(d, lo, hi);
      lanes[l] = lo + hi;
    } else {
      s[l] = lane_sum<W>(d);
    }
  }
  if constexpr (kTransposed) leaf_sums8(lanes, s);
  if (!range.template within<kMaxRange, kTopExp>()) return false;
  for (int l = 0; l < kLeaves; ++l) out[l] = s[l];
  return true;
}

// How many rows ahead a column tile prefetches its row (tile_leaf_simd). 2-core Xeon VM
// (AVX-512), (4096, 4096) float32 columns, one thread: 2.9 ms at 8, 3.8-5.1 ms without
// (docs/perf-log.md 2026-12-05).
constexpr int kTileRowsAhead = 8;

// One leaf of kTile neighbouring outputs of a canonical sum (the column layout): element j of
// the leaf is p[rows[j] + w] for output w, and each output folds its n elements in order, widened
// to double from +0, as the scalar loop does: the same additions, W outputs a vector. Sums into
// a[0 .. kTile).
template <int W, int kTile, class T>
[[gnu::always_inline]] inline void tile_leaf_simd(const T* p, const int64_t* rows, int n,
                                                  double* a) {
  using f64v = typename VecOf<double, W>::type;
  using f64h = typename VecOf<double, W / 2>::type;
  using f32v = typename VecOf<float, W>::type;
  using u16v = typename VecOf<uint16_t, W>::type;
  using u32v = typename VecOf<uint32_t, W>::type;
  constexpr int kVecs = kTile / W;
  // Accumulators of one register each (W / 2 doubles): at W doubles (two registers) GCC kept
  // them on the stack, a load and a store around every addition.
  f64h acc[2 * kVecs] = {};
  for (int j = 0; j < n; ++j) {
    const T* q = p + rows[j];
    // The tile's row kTileRowsAhead rows on: rows lie a row of the input apart, too far for the
    // hardware's prefetchers, so each row's load waited for memory.
    if (j + kTileRowsAhead < n) prefetch_ahead(p + rows[j + kTileRowsAhead], kTile * sizeof(T), 0);
    for (int u = 0; u < kVecs; ++u) {
      f64v d;
      if constexpr (std::is_same_v<T, float>) {
        d = __builtin_convertvector(load_vec<f32v>(q + u * W), f64v);
      } else {  // bfloat16 bits are a float's top half
        const u32v b = __builtin_convertvector(load_vec<u16v>(q + u * W), u32v) << 16;
        d = __builtin_convertvector(load_vec<f32v>(&b), f64v);
      }
      f64h lo, hi;
      halves(d, lo, hi);
      acc[2 * u] += lo;
      acc[2 * u + 1] += hi;
    }
  }
  std::memcpy(a, acc, sizeof acc);
}

// The transpose of W vectors of W lanes (r[i][k] -> r[k][i]), in log2(W) stages: the stage of
// distance d swaps, in each pair of rows (i, i + d) with i & d == 0, the lanes m & d != 0 of row
// i with the lanes m - d of row i + d (the off-diagonal d x d blocks of each 2d x 2d block).
template <int W, int d, class V, size_t... I>
[[gnu::always_inline]] inline void swap_lanes(V& a, V& b, std::index_sequence<I...>) {
  const V lo = __builtin_shufflevector(a, b, ((I & d) ? W + int(I) - d : int(I))...);
  const V hi = __builtin_shufflevector(a, b, ((I & d) ? W + int(I) : int(I) + d)...);
  a = lo;
  b = hi;
}
template <int W, int d = 1, class V>
[[gnu::always_inline]] inline void transpose(V* r) {
  if constexpr (d < W) {
    for (int i = 0; i < W; ++i)
      if (!(i & d)) swap_lanes<W, d>(r[i], r[i + d], std::make_index_sequence<W>{});
    transpose<W, 2 * d>(r);
  }
}

// kLeaves whole float64 leaves of a canonical sum (CompSumOp): each leaf folds its elements in
// order into a compensated pair (TwoSum, the error into c), as CompSumOp::reduce does, one leaf a
// lane; a block of W elements of W leaves is transposed so that vector k holds element k of each.
// The same operations in the same order as the scalar loop: the same bits.
template <int W, int kLeaves>
[[gnu::always_inline]] inline void comp_f64_simd(const double* p, Compensated<double>* out) {
  using f64v = typename VecOf<double, W>::type;
  constexpr int kGroups = kLeaves / W;
  static_assert(kGroups * W == kLeaves && kLeaf % W == 0);
  f64v s[kGroups] = {}, c[kGroups] = {};
  constexpr int kSlice = kLeaves * kLeaf * int(sizeof(double)) / (kLeaf / W);
  for (int j = 0; j < kLeaf; j += W) {
    prefetch_ahead(reinterpret_cast<const char*>(p) + j / W * kSlice, kSlice, kCompPrefetchBytes);
    for (int g = 0; g < kGroups; ++g) {
      f64v r[W];
      for (int l = 0; l < W; ++l) r[l] = load_vec<f64v>(p + (g * W + l) * kLeaf + j);
      transpose<W>(r);               // r[k]: element j + k of leaves gW .. gW + W - 1
      for (int k = 0; k < W; ++k) {  // two_sum(s, r[k]) and c + e, lane by lane
        const f64v t = s[g] + r[k], bb = t - s[g];
        c[g] = c[g] + ((s[g] - (t - bb)) + (r[k] - bb));
        s[g] = t;
      }
    }
  }
  for (int g = 0; g < kGroups; ++g)
    for (int l = 0; l < W; ++l) out[g * W + l] = {s[g][l], c[g][l]};
}

TREDUCE_VEC_END

template <int kTile, class T>
__attribute__((target("avx2"))) void tile_leaf_avx2(const T* p, const int64_t* rows, int n,
                                                    double* a) {
  tile_leaf_simd<8, kTile>(p, rows, n, a);
}
template <int kTile, class T>
__attribute__((target("avx512f"))) void tile_leaf_avx512(const T* p, const int64_t* rows, int n,
                                                         double* a) {
  tile_leaf_simd<16, kTile>(p, rows, n, a);
}

// Up to nb consecutive batches of kLeaves leaves, each batch's sums at out + kLeaves * b by
// kBatch: the number of batches done before the first that is not exact (or nb). Many batches a
// call: a call a batch cost about 10% of a bfloat16 leaf (2-core Xeon VM, a standalone harness
// over 2^18 values: 4.66 -> 4.18 ns a leaf), its prologue and its spills of the lanes.
template <int kLeaves, class T, bool (*kBatch)(const T*, double*)>
[[gnu::always_inline]] inline int64_t exact_batches(const T* p, int64_t nb, double* out) {
  int64_t b = 0;
  while (b < nb && kBatch(p + b * kLeaves * kLeaf, out + b * kLeaves)) ++b;
  return b;
}
// bfloat16: the float32 tier, then the double one.
template <int W, int kLeaves>
[[gnu::always_inline]] inline bool exact_bf16_tiers(const uint16_t* p, double* out) {
  return exact_bf16_simd<float, W, kLeaves>(p, out) || exact_bf16_simd<double, W, kLeaves>(p, out);
}
template <int kLeaves>
__attribute__((target("avx2"))) int64_t exact_f32_avx2(const float* p, int64_t nb, double* out) {
  return exact_batches<kLeaves, float, exact_f32_simd<8, kLeaves>>(p, nb, out);
}
template <int kLeaves>
__attribute__((target("avx512f"))) int64_t exact_f32_avx512(const float* p, int64_t nb,
                                                            double* out) {
  return exact_batches<kLeaves, float, exact_f32_simd<16, kLeaves>>(p, nb, out);
}
template <int kLeaves>
__attribute__((target("avx2"))) int64_t exact_bf16_avx2(const uint16_t* p, int64_t nb,
                                                        double* out) {
  return exact_batches<kLeaves, uint16_t, exact_bf16_tiers<8, kLeaves>>(p, nb, out);
}
template <int kLeaves>
__attribute__((target("avx512f,avx512bw"))) int64_t exact_bf16_avx512(const uint16_t* p, int64_t nb,
                                                                      double* out) {
  return exact_batches<kLeaves, uint16_t, exact_bf16_tiers<16, kLeaves>>(p, nb, out);
}

template <int kLeaves>
__attribute__((target("avx2"))) void comp_f64_avx2(const double* p, Compensated<double>* out) {
  comp_f64_simd<4, kLeaves>(p, out);
}
template <int kLeaves>
__attribute__((target("avx512f"))) void comp_f64_avx512(const double* p, Compensated<double>* out) {
  comp_f64_simd<8, kLeaves>(p, out);
}

#endif  // __x86_64__

// Up to nb batches of kLeaves whole leaves from p (T: float, or bfloat16 as uint16_t), their exact
// sums into out (kLeaves a batch): the number of batches done before the first that is not exact
// (see above); 0 where the instruction set has no vector path.
template <int kLeaves, class T>
inline int64_t exact_leaves(Isa isa, const T* p, int64_t nb, double* out) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>) {
    if (isa == Isa::kAvx512) return exact_f32_avx512<kLeaves>(p, nb, out);
    if (isa == Isa::kAvx2) return exact_f32_avx2<kLeaves>(p, nb, out);
  } else {
    if (isa == Isa::kAvx512) return exact_bf16_avx512<kLeaves>(p, nb, out);
    if (isa == Isa::kAvx2) return exact_bf16_avx2<kLeaves>(p, nb, out);
  }
#endif
  return 0;
}

// kLeaves whole float64 leaves from p into their compensated pairs (see comp_f64_simd), or false
// where the instruction set has no vector path.
template <int kLeaves>
inline bool comp_leaves(Isa isa, const double* p, Compensated<double>* out) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return comp_f64_avx512<kLeaves>(p, out), true;
  if (isa == Isa::kAvx2) return comp_f64_avx2<kLeaves>(p, out), true;
#endif
  return false;
}

// A column tile's leaf (see tile_leaf_simd; T: float, or bfloat16 as uint16_t), or false where
// the instruction set has no vector path.
template <int kTile, class T>
inline bool tile_leaf(Isa isa, const T* p, const int64_t* rows, int n, double* a) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return tile_leaf_avx512<kTile>(p, rows, n, a), true;
  if (isa == Isa::kAvx2) return tile_leaf_avx2<kTile>(p, rows, n, a), true;
#endif
  return false;
}

}  // namespace cpu
}  // namespace treduce
