// exact_host.cpp: the exact sum on the CPU, for the prototype's tests and its CPU speed.
// A plain C library (ctypes): tests/test_exact_proto.py compiles it with g++ and checks it
// against Python's exact rationals; bench/exact/proto.py checks the CUDA kernels against it.
//
// The elements go in chunks of kChunk. A chunk within run_exact's bound is summed in eight double
// lanes (any order is exact there, so the compiler may vectorise it); a chunk outside it (a wide
// range of magnitudes, infinities, NaN) adds its elements one by one through merge(). Each
// chunk's sum merges into the total; every error term goes to the digits.
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "exact.h"

namespace {

using namespace exact;

constexpr int kChunkLog2 = 10;
constexpr int64_t kChunk = int64_t(1) << kChunkLog2;
constexpr int kLanes = 8;
static_assert(kChunkLog2 <= kHalfRunLog2, "a float16 chunk must be exact in a double");

float half_to_float(uint16_t h) {  // exact
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float f;
  if (e == 0) {
    f = std::ldexp(static_cast<float>(m), -24);
  } else if (e == 31) {
    const uint32_t b = 0x7f800000u | (m << 13);
    std::memcpy(&f, &b, 4);
  } else {
    const uint32_t b = ((e + 112) << 23) | (m << 13);
    std::memcpy(&f, &b, 4);
  }
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b |= sign;
  std::memcpy(&f, &b, 4);
  return f;
}

// kind 0: float32, 1: bfloat16 (uint16 patterns), 2: float16 (uint16 patterns).
template <int kKind>
float load(const void* x, int64_t i) {
  if constexpr (kKind == 0) {
    return static_cast<const float*>(x)[i];
  } else if constexpr (kKind == 1) {
    const uint32_t b = uint32_t(static_cast<const uint16_t*>(x)[i]) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  } else {
    return half_to_float(static_cast<const uint16_t*>(x)[i]);
  }
}

struct Total {
  double s = 0.0;
  Digits g{};
  bool deposited = false;
  int flags = 0;
  void sink(double e) {
    deposit(g, e);
    deposited = true;
  }
};

#if defined(__x86_64__)
// float32 and bfloat16 chunks in one pass with AVX2: the bound (max and min of the patterns) and
// four double lanes of sums side by side; the sums are used only where the bound holds (else
// chunk_sum redoes the chunk one by one). m is a multiple of 16.
template <int kKind>
__attribute__((target("avx2"))) bool chunk_avx2(const void* x, int64_t i0, int64_t m, double& out) {
  constexpr int kP = kKind == 0 ? 24 : 8;
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), one = _mm256_set1_epi32(1);
  __m256i hi = _mm256_setzero_si256(), lo = _mm256_set1_epi32(-1);
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                    _mm256_setzero_pd()};
  for (int64_t i = 0; i < m; i += 16) {
    for (int u = 0; u < 2; ++u) {
      __m256i p;
      if constexpr (kKind == 0) {
        p = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(static_cast<const float*>(x) + i0 + i + 8 * u));
      } else {
        const __m128i h = _mm_loadu_si128(
            reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(x) + i0 + i + 8 * u));
        p = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
      }
      const __m256i a = _mm256_and_si256(p, abs_mask);
      hi = _mm256_max_epu32(hi, a);
      lo = _mm256_min_epu32(lo, _mm256_sub_epi32(a, one));
      const __m256 f = _mm256_castsi256_ps(p);
      acc[2 * u] = _mm256_add_pd(acc[2 * u], _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
      acc[2 * u + 1] = _mm256_add_pd(acc[2 * u + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
    }
  }
  const __m256d a0 = _mm256_add_pd(acc[0], acc[2]), a1 = _mm256_add_pd(acc[1], acc[3]);
  alignas(32) uint32_t h[8], l[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(h), hi);
  _mm256_store_si256(reinterpret_cast<__m256i*>(l), lo);
  Bound b;
  for (int k = 0; k < 8; ++k) {
    b.hi = h[k] > b.hi ? h[k] : b.hi;
    b.lo = l[k] < b.lo ? l[k] : b.lo;
  }
  if (!run_exact<kP>(b, kChunkLog2)) return false;
  alignas(32) double d[8];
  _mm256_store_pd(d, a0);
  _mm256_store_pd(d + 4, a1);
  double c = 0.0;
  for (int k = 0; k < 8; ++k) c += d[k];  // exact: within the bound
  out = c;
  return true;
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

template <int kKind>
double chunk_sum(const void* x, int64_t i0, int64_t m, Total& t) {
  constexpr int kP = kKind == 0 ? 24 : kKind == 1 ? 8 : 11;
#if defined(__x86_64__)
  if constexpr (kKind != 2) {
    double c;
    if (m % 16 == 0 && have_avx2() && chunk_avx2<kKind>(x, i0, m, c)) return c;
  }
#endif
  uint32_t hi[kLanes] = {}, lo[kLanes];
  for (int l = 0; l < kLanes; ++l) lo[l] = 0xffffffffu;
  int64_t i = 0;
  for (; i + kLanes <= m; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const uint32_t a = bits_of(load<kKind>(x, i0 + i + l)) & 0x7fffffffu;
      hi[l] = a > hi[l] ? a : hi[l];
      lo[l] = a - 1 < lo[l] ? a - 1 : lo[l];
    }
  Bound b;
  for (; i < m; ++i) widen(b, bits_of(load<kKind>(x, i0 + i)));
  for (int l = 0; l < kLanes; ++l) {
    b.hi = hi[l] > b.hi ? hi[l] : b.hi;
    b.lo = lo[l] < b.lo ? lo[l] : b.lo;
  }
  // float16: exact within kHalfRunLog2 >= kChunkLog2 elements, unless a NaN or inf is there
  const bool fast = kKind == 2 ? b.hi < 0x7f800000u : run_exact<kP>(b, kChunkLog2);
  if (fast) {
    double acc[kLanes] = {};
    i = 0;
    for (; i + kLanes <= m; i += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(load<kKind>(x, i0 + i + l));
    for (; i < m; ++i) acc[0] += static_cast<double>(load<kKind>(x, i0 + i));
    double c = 0.0;
    for (int l = 0; l < kLanes; ++l) c += acc[l];
    return c;
  }
  double c = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    const float v = load<kKind>(x, i0 + i);
    const uint32_t p = bits_of(v);
    if ((p & 0x7f800000u) == 0x7f800000u)
      flag_special(t.flags, p);
    else
      c = merge(c, static_cast<double>(v), [&](double e) { t.sink(e); });
  }
  return c;
}

template <int kKind>
double run(const void* x, int64_t n, int mean) {
  constexpr Format f = kKind == 0 ? kFloat32 : kKind == 1 ? kBFloat16 : kFloat16;
  Total t;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = n - i0 < kChunk ? n - i0 : kChunk;
    const double c = chunk_sum<kKind>(x, i0, m, t);
    t.s = merge(t.s, c, [&](double e) { t.sink(e); });
  }
  const Digits* g = t.deposited ? &t.g : nullptr;
  return mean ? round_mean(t.s, g, t.flags, static_cast<uint64_t>(n), f)
              : round_sum(t.s, g, t.flags, f);
}

// Every element straight into the digits: an independent path for the tests.
template <int kKind>
double run_digits(const void* x, int64_t n, int mean) {
  constexpr Format f = kKind == 0 ? kFloat32 : kKind == 1 ? kBFloat16 : kFloat16;
  Digits g{};
  int flags = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = load<kKind>(x, i);
    const uint32_t p = bits_of(v);
    if ((p & 0x7f800000u) == 0x7f800000u)
      flag_special(flags, p);
    else
      deposit(g, static_cast<double>(v));
  }
  return mean ? round_mean(0.0, &g, flags, static_cast<uint64_t>(n), f)
              : round_sum(0.0, &g, flags, f);
}

}  // namespace

extern "C" {
// The rounded result (a value of the input's format) as a double; n >= 1 for a mean.
double exact_sum(const void* x, int64_t n, int kind, int mean) {
  return kind == 0 ? run<0>(x, n, mean) : kind == 1 ? run<1>(x, n, mean) : run<2>(x, n, mean);
}
// rows x K contiguous elements: each row's result into out[row] (float32 input).
void exact_rows(const void* x, int64_t rows, int64_t K, int kind, int mean, double* out) {
  const int64_t esize = kind == 0 ? 4 : 2;
  for (int64_t r = 0; r < rows; ++r)
    out[r] = exact_sum(static_cast<const char*>(x) + r * K * esize, K, kind, mean);
}
double exact_sum_digits(const void* x, int64_t n, int kind, int mean) {
  return kind == 0   ? run_digits<0>(x, n, mean)
         : kind == 1 ? run_digits<1>(x, n, mean)
                     : run_digits<2>(x, n, mean);
}
}
