// The CPU's vector paths for float32 and bfloat16 sums in the canonical order
// (docs/numerics.md), with the in-order fold's bits: exact leaves (a leaf whose exponent range
// makes every order of addition exact, summed in vector lanes) and column tiles (neighbouring
// outputs side by side, each folding its leaf in order, one output a lane). Plain C++ with GCC
// vector types; reduce_cpu.cpp picks the instruction set and keeps the scalar fold for the rest.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../reduce_ops.h"

namespace treduce {
namespace cpu {

constexpr int kLeaf = int(kCanonLeaf);

// How far ahead the CPU's contiguous leaf loops prefetch. 2-core Xeon VM (AVX-512), 16M float32 sum
// at one thread: 0.69x torch without, 0.89-0.97x at 4 KB, 0.73-0.83x at 1 KB; see docs/perf-log.md.
constexpr int kPrefetchBytes = 4096;

// Prefetches the `bytes` that lie kPrefetchBytes after p (for a loop about to read p[0, bytes)).
inline void prefetch_ahead(const void* p, int bytes) {
  for (int c = 0; c < bytes; c += 64)
    __builtin_prefetch(static_cast<const char*>(p) + kPrefetchBytes + c);
}

// Leaves whose sum is exact in any order: then the in-order fold's bits are those of any other
// fold, so the leaf is summed in vector lanes (where the CPU has AVX2 or AVX-512; otherwise every
// leaf is folded in order). A value of a type with m mantissa bits and biased exponent E >= 1 is a
// multiple of 2^(E - bias - m) (subnormals: of the E = 1 unit) below 2^(E - bias + 1), so a sum
// of k such values, in any order and at every step, is a multiple of the smallest unit below
// 2^(Emax - Emin + m + 1 + log2 k) of them: exact in a format of p significant bits when
// Emax - Emin <= p - m - 1 - log2 k (Emin over the nonzero values). A leaf's 64 values in double
// (p = 53): float32 (m = 23) within 23 binades (randn data: nearly every leaf), bfloat16 (m = 7)
// within 39. Infinities and NaN (whose payloads an order may change) and wider leaves return
// false and are folded in order by the caller.
template <int kMaxRange, int kExpBits>
inline bool exponent_range_within(uint32_t emax, uint32_t emin) {
  constexpr uint32_t kInfExp = (1u << kExpBits) - 1;
  return emax != kInfExp && (emax <= emin || emax - emin <= uint32_t(kMaxRange));
}
// The largest range for sums of k = 2^kLogTerms values of m mantissa bits in p significant bits.
constexpr int max_exact_range(int p, int m, int kLogTerms) { return p - m - 1 - kLogTerms; }

#if defined(__x86_64__)
// The vector helpers below are always inlined into a function of one instruction set, so no
// vector crosses a call: GCC's note that passing one would change the ABI does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <class E, int W>
struct VecOf {  // W lanes of E, as a GCC vector type
  typedef E type __attribute__((vector_size(sizeof(E) * W)));
};
template <class V, class P>
[[gnu::always_inline]] inline V load_vec(const P* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The sum of a vector's W double lanes, in halves (log2 W additions deep); the caller's sums are
// exact, so any order gives the same bits.
template <int W>
[[gnu::always_inline]] inline double lane_sum(typename VecOf<double, W>::type v) {
  if constexpr (W == 1) {
    return v[0];
  } else {
    using half = typename VecOf<double, W / 2>::type;
    const half lo = load_vec<half>(&v);
    const half hi = load_vec<half>(reinterpret_cast<const char*>(&v) + sizeof lo);
    return lane_sum<W / 2>(lo + hi);
  }
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
  // The largest (kMax) or smallest lane of v, in halves.
  template <int N, class V>
  [[gnu::always_inline]] static Elem fold_lanes(V v, bool kMax) {
    if constexpr (N == 1) {
      return v[0];
    } else {
      using half = typename VecOf<Elem, N / 2>::type;
      const half lo = load_vec<half>(&v);
      const half hi = load_vec<half>(reinterpret_cast<const char*>(&v) + sizeof lo);
      return fold_lanes<N / 2>(kMax ? (lo > hi ? lo : hi) : (lo < hi ? lo : hi), kMax);
    }
  }
  [[gnu::always_inline]] void see(U bits) {
    const U a = bits & kAbs, a1 = a - Elem(1);
    amax = a > amax ? a : amax;
    amin1 = a1 < amin1 ? a1 : amin1;
  }
  // Whether the biased exponents (a subnormal counts as 1) lie within kMaxRange binades.
  template <int kMaxRange>
  bool within() const {
    const uint32_t a = fold_lanes<W>(amax, true), b = fold_lanes<W>(amin1, false);
    const uint32_t emin = b == Elem(~Elem(0)) ? 0xffu : std::max<uint32_t>((b + 1) >> kShift, 1);
    return exponent_range_within<kMaxRange, 8>(a >> kShift, emin);
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
  RangeLanes<u16v, 2 * W, 7> range;
  double s[kLeaves];
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
    s[l] = lane_sum<W>(__builtin_convertvector(acc[0] + acc[1], f64v));
  }
  if (!range.template within<kMaxRange>()) return false;
  for (int l = 0; l < kLeaves; ++l) out[l] = s[l];
  return true;
}

// One leaf of kTile neighbouring outputs of a canonical sum (the column layout): element j of
// the leaf is p[rows[j] + w] for output w, and each output folds its n elements in order, widened
// to double from +0, as the scalar loop does: the same additions, W outputs a vector. Sums into
// a[0 .. kTile).
template <int W, int kTile, class T>
[[gnu::always_inline]] inline void tile_leaf_simd(const T* p, const int64_t* rows, int n,
                                                  double* a) {
  using f64v = typename VecOf<double, W>::type;
  using f32v = typename VecOf<float, W>::type;
  using u16v = typename VecOf<uint16_t, W>::type;
  using u32v = typename VecOf<uint32_t, W>::type;
  constexpr int kVecs = kTile / W;
  f64v acc[kVecs] = {};
  for (int j = 0; j < n; ++j) {
    const T* q = p + rows[j];
    for (int u = 0; u < kVecs; ++u) {
      if constexpr (std::is_same_v<T, float>) {
        acc[u] += __builtin_convertvector(load_vec<f32v>(q + u * W), f64v);
      } else {  // bfloat16 bits are a float's top half
        const u32v b = __builtin_convertvector(load_vec<u16v>(q + u * W), u32v) << 16;
        acc[u] += __builtin_convertvector(load_vec<f32v>(&b), f64v);
      }
    }
  }
  std::memcpy(a, acc, sizeof acc);
}

#pragma GCC diagnostic pop

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

template <int kLeaves>
__attribute__((target("avx2"))) bool exact_f32_avx2(const float* p, double* out) {
  return exact_f32_simd<8, kLeaves>(p, out);
}
template <int kLeaves>
__attribute__((target("avx512f"))) bool exact_f32_avx512(const float* p, double* out) {
  return exact_f32_simd<16, kLeaves>(p, out);
}
// bfloat16: the float32 tier, then the double one.
template <int kLeaves>
__attribute__((target("avx2"))) bool exact_bf16_avx2(const uint16_t* p, double* out) {
  return exact_bf16_simd<float, 8, kLeaves>(p, out) || exact_bf16_simd<double, 8, kLeaves>(p, out);
}
template <int kLeaves>
__attribute__((target("avx512f,avx512bw"))) bool exact_bf16_avx512(const uint16_t* p, double* out) {
  return exact_bf16_simd<float, 16, kLeaves>(p, out) ||
         exact_bf16_simd<double, 16, kLeaves>(p, out);
}

#endif  // __x86_64__

// The instruction sets of the exact leaves; kScalar has none (every leaf is folded in order).
enum class Isa { kScalar, kAvx2, kAvx512 };

// kLeaves whole leaves from p (T: float, or bfloat16 as uint16_t): their exact sums into out and
// true, or false (see above).
template <int kLeaves, class T>
inline bool exact_leaves(Isa isa, const T* p, double* out) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>) {
    if (isa == Isa::kAvx512) return exact_f32_avx512<kLeaves>(p, out);
    if (isa == Isa::kAvx2) return exact_f32_avx2<kLeaves>(p, out);
  } else {
    if (isa == Isa::kAvx512) return exact_bf16_avx512<kLeaves>(p, out);
    if (isa == Isa::kAvx2) return exact_bf16_avx2<kLeaves>(p, out);
  }
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
