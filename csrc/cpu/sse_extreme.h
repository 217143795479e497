// sse_extreme.h: amax/amin of float32, float64 and bfloat16 leaves in SSE2 lanes, bit for bit
// the scalar fold's (ExtremeOp::combine in reduce_chunk's order), for the CPU backend
// (reduce_cpu.cpp): the leaves that extreme_leaves.h's any-order batches decline (a NaN, a zero
// result) and the column tiles.
#pragma once
#include <c10/util/BFloat16.h>
#include <emmintrin.h>
#include <xmmintrin.h>

#include <cstdint>
#include <type_traits>

#include "../reduce_ops.h"
#include "vec.h"

namespace treduce {

// Max/min of float32 and float64 (ExtremeOp), a vector at a time: lane for lane the select of
// ExtremeOp::combine (take b when a is not NaN and b is better or NaN), which the compiler leaves
// scalar. Bit for bit the scalar results.
template <class Op>
struct sse_extreme : std::false_type {};
template <class T, bool kMax>
struct sse_extreme<ExtremeOp<T, kMax>>
    : std::bool_constant<std::is_same_v<T, float> || std::is_same_v<T, double>> {
  static constexpr bool max = kMax;
};

template <bool kMax>
inline __m128 extreme_lanes(__m128 a, __m128 b) {
  const __m128 better = kMax ? _mm_cmpgt_ps(b, a) : _mm_cmplt_ps(b, a);
  const __m128 take = _mm_and_ps(_mm_cmpord_ps(a, a), _mm_or_ps(better, _mm_cmpunord_ps(b, b)));
  return _mm_or_ps(_mm_and_ps(take, b), _mm_andnot_ps(take, a));
}
template <bool kMax>
inline __m128d extreme_lanes(__m128d a, __m128d b) {
  const __m128d better = kMax ? _mm_cmpgt_pd(b, a) : _mm_cmplt_pd(b, a);
  const __m128d take = _mm_and_pd(_mm_cmpord_pd(a, a), _mm_or_pd(better, _mm_cmpunord_pd(b, b)));
  return _mm_or_pd(_mm_and_pd(take, b), _mm_andnot_pd(take, a));
}

// The fast pass: MAXPS/MINPS (b > a ? b : a, b < a ? b : a) are ExtremeOp::combine exactly
// when neither lane is NaN (a tie keeps a, as the select does), in one instruction instead of
// eight. NaN lanes are only noticed (nan_lanes, or-ed up); a leaf batch or tile that met one is
// folded again with extreme_lanes, so the bits stay the scalar fold's.
template <bool kMax>
inline __m128 fast_extreme(__m128 a, __m128 b) {
  return kMax ? _mm_max_ps(b, a) : _mm_min_ps(b, a);
}
template <bool kMax>
inline __m128d fast_extreme(__m128d a, __m128d b) {
  return kMax ? _mm_max_pd(b, a) : _mm_min_pd(b, a);
}
inline __m128 nan_lanes(__m128 b) { return _mm_cmpunord_ps(b, b); }
inline __m128d nan_lanes(__m128d b) { return _mm_cmpunord_pd(b, b); }
inline __m128 or_lanes(__m128 a, __m128 b) { return _mm_or_ps(a, b); }
inline __m128d or_lanes(__m128d a, __m128d b) { return _mm_or_pd(a, b); }
inline bool any_lane(__m128 m) { return _mm_movemask_ps(m) != 0; }
inline bool any_lane(__m128d m) { return _mm_movemask_pd(m) != 0; }

// One lane step of either pass: the exact select (kExact), or MAXPS/MINPS noting x's NaN lanes.
template <bool kMax, bool kExact, class V>
inline V extreme_step(V a, V x, V& nan) {
  if constexpr (kExact) {
    return extreme_lanes<kMax>(a, x);
  } else {
    nan = or_lanes(nan, nan_lanes(x));
    return fast_extreme<kMax>(a, x);
  }
}

// Vectors of value type T (float: 4 lanes, double: 2) loaded from inputs of type in_t: the same
// type, or bfloat16 widened to float exactly (its bits are a float's upper half).
template <class T>
struct SseOf;
template <>
struct SseOf<float> {
  using V = __m128;
  static constexpr int kLanes = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void load8(const c10::BFloat16* p, V& lo, V& hi) {  // p[0..3] -> lo, p[4..7] -> hi
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    lo = _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), x));
    hi = _mm_castsi128_ps(_mm_unpackhi_epi16(_mm_setzero_si128(), x));
  }
  static V splat(float v) { return _mm_set1_ps(v); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
};
template <>
struct SseOf<double> {
  using V = __m128d;
  static constexpr int kLanes = 2;
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static V splat(double v) { return _mm_set1_pd(v); }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
};

// kLeaves whole leaves (p[0 .. kLeaves*kLeaf)) of a max/min: each leaf's eight interleaved
// accumulators (lane l takes elements l, l + 8, ... of its leaf, as in reduce_chunk's scalar
// loop) as 16 bytes of lanes, the leaves side by side for the pipeline; then each leaf's eight
// lanes meet in reduce_chunk's tree.
template <class Op, int kLeaves, class in_t>
void extreme_leaves(const in_t* p, typename Op::acc_t* out) {
  constexpr int64_t kLeaf = kCanonLeaf;
  using T = typename Op::value_t;
  using S = SseOf<T>;
  constexpr bool kMax = sse_extreme<Op>::max;
  constexpr int W = S::kLanes;
  constexpr int kVecs = 8 / W;  // vectors per leaf
  typename S::V v[kLeaves][kVecs];
  // kExact = false: the fast pass (returns whether it met a NaN); true: the exact selects.
  const auto fold = [&](auto exact) {
    constexpr bool kExact = decltype(exact)::value;
    typename S::V nan = S::splat(T(0));
    for (int l = 0; l < kLeaves; ++l)
      for (int u = 0; u < kVecs; ++u) v[l][u] = S::splat(Op::identity());
    for (int64_t j = 0; j < kLeaf; j += 8)
      for (int l = 0; l < kLeaves; ++l) {
        if constexpr (std::is_same_v<in_t, T>) {
          for (int u = 0; u < kVecs; ++u)
            v[l][u] = extreme_step<kMax, kExact>(v[l][u], S::load(p + l * kLeaf + j + u * W), nan);
        } else {  // bfloat16 into float lanes
          typename S::V lo, hi;
          S::load8(p + l * kLeaf + j, lo, hi);
          v[l][0] = extreme_step<kMax, kExact>(v[l][0], lo, nan);
          v[l][1] = extreme_step<kMax, kExact>(v[l][1], hi, nan);
        }
      }
    return any_lane(nan);
  };
  cpu::prefetch_ahead(p, kLeaves * kLeaf * sizeof(in_t));
  if (fold(std::false_type{})) fold(std::true_type{});
  for (int l = 0; l < kLeaves; ++l) {
    if constexpr (std::is_same_v<T, float>) {
      // reduce_chunk's tree over the eight lanes ((a0 a1) (a2 a3)) ((a4 a5) (a6 a7)), by lanes:
      // even lanes against odd ones, twice, then the last pair.
      const __m128 z =
          extreme_lanes<kMax>(_mm_shuffle_ps(v[l][0], v[l][1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm_shuffle_ps(v[l][0], v[l][1], _MM_SHUFFLE(3, 1, 3, 1)));
      const __m128 z2 = extreme_lanes<kMax>(_mm_shuffle_ps(z, z, _MM_SHUFFLE(2, 0, 2, 0)),
                                            _mm_shuffle_ps(z, z, _MM_SHUFFLE(3, 1, 3, 1)));
      const __m128 z3 = extreme_lanes<kMax>(z2, _mm_shuffle_ps(z2, z2, _MM_SHUFFLE(1, 1, 1, 1)));
      out[l] = _mm_cvtss_f32(z3);
    } else {
      // double: the same tree with two lanes. v[l][u] holds lanes (2u, 2u + 1): pair each
      // vector's lanes across two vectors (evens against odds), then the two pairs' results.
      const __m128d e = extreme_lanes<kMax>(_mm_unpacklo_pd(v[l][0], v[l][1]),
                                            _mm_unpackhi_pd(v[l][0], v[l][1]));  // a01, a23
      const __m128d f = extreme_lanes<kMax>(_mm_unpacklo_pd(v[l][2], v[l][3]),
                                            _mm_unpackhi_pd(v[l][2], v[l][3]));  // a45, a67
      const __m128d g = extreme_lanes<kMax>(_mm_unpacklo_pd(e, f), _mm_unpackhi_pd(e, f));
      out[l] = _mm_cvtsd_f64(extreme_lanes<kMax>(g, _mm_unpackhi_pd(g, g)));  // (a0-3, a4-7)
    }
  }
}

// Whether extreme_leaves() serves Op over in_t (kSseTiles: the column tiles, same type only).
template <class Op, class in_t>
constexpr bool kSseTiles = sse_extreme<Op>::value && std::is_same_v<in_t, typename Op::value_t>;
template <class Op, class in_t>
constexpr bool kSseLeaves =
    kSseTiles<Op, in_t> || (sse_extreme<Op>::value && std::is_same_v<in_t, c10::BFloat16> &&
                            std::is_same_v<typename Op::value_t, float>);

}  // namespace treduce
