// exact.h: exact sums and means of float32, bfloat16 and float16 values, rounded once to the
// output type. Host and device; nothing from torch.
//
// Every float32, bfloat16 and float16 value is an integer multiple of 2^-149 (a "unit"), so the
// exact sum is an integer number of units. It is kept in three exact pieces:
//
//   run      a double that adds elements while a bound proves every addition exact. All elements
//            of the run are multiples of ulp(smallest) and below 2^(Emax + 1), and there are at
//            most 2^L of them, so each partial sum is an integer of at most 53 bits in units of
//            ulp(smallest). The bound is checked on the integer max and min of the elements' bit
//            patterns (run_exact), once per batch of elements, before the batch is added.
//   merge    two exact doubles a and b become s = fl(a + b) and the error e = (a + b) - s, which
//            TwoSum finds exactly; e is nonzero only where the sum needs more than 53 bits, and
//            then goes to the digits.
//   Digits   a fixed-point integer in units, 32 bits per digit held in an int64 (so that deposits
//            need no carries until the end): bits 2^0 .. 2^352 of units, room for 2^31 deposits.
//
// The result is s plus the digits, rounded once (round_sum, round_mean). Where nothing was
// deposited, which is the common case, s alone is the exact sum and one conversion rounds it.
// Addition of integers is associative: the bits of the result do not depend on the order, the
// split into runs or threads, or the device.
//
// NaN and infinities never enter a run (run_exact fails on them): the slow path records them in
// flags, and the result is NaN if any element is NaN or both infinities occur, else the infinity.
// A sum whose exact value rounds past the format's largest finite value is an infinity; partial
// sums never overflow. A zero sum is +0.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define EX_HD __host__ __device__ __forceinline__
#else
#define EX_HD inline
#endif

namespace exact {

constexpr int kUnit = -149;  // the exponent of one unit
constexpr int kDigits = 11;  // 32-bit digits: units 2^0 .. 2^352
using u128 = unsigned __int128;

EX_HD uint64_t bits_of(double x) {
#ifdef __CUDA_ARCH__
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}

EX_HD uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
  return static_cast<uint32_t>(__float_as_uint(x));
#else
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}

EX_HD int clz64(uint64_t v) {  // v != 0
#ifdef __CUDA_ARCH__
  return __clzll(static_cast<long long>(v));
#else
  return __builtin_clzll(v);
#endif
}

EX_HD int clz128(u128 v) {  // v != 0
  const uint64_t hi = static_cast<uint64_t>(v >> 64);
  return hi ? clz64(hi) : 64 + clz64(static_cast<uint64_t>(v));
}

// ---- runs ------------------------------------------------------------------------------------

// The largest and the smallest nonzero magnitude of a run's elements, as float32 bit patterns
// (magnitudes order as their patterns). lo holds (smallest nonzero pattern) - 1, so that a zero,
// whose pattern minus one wraps to the unsigned maximum, never becomes the smallest.
struct Bound {
  uint32_t hi = 0;
  uint32_t lo = 0xffffffffu;
};

EX_HD void widen(Bound& b, uint32_t pattern) {
  const uint32_t a = pattern & 0x7fffffffu;
  b.hi = a > b.hi ? a : b.hi;
  b.lo = a - 1 < b.lo ? a - 1 : b.lo;
}

// Whether a double sum of at most 2^log2n elements within the bound is exact, for inputs with
// kP significand bits (float32 24, bfloat16 8). Elements are multiples of 2^(max(Elo, 1) - 127 -
// (kP - 1)) and below 2^(max(Ehi, 1) - 126): the partial sums need
// Ehi - Elo + kP + log2n bits. Fails on infinities and NaN.
template <int kP>
EX_HD bool run_exact(Bound b, int log2n) {
  const int ehi = b.hi >> 23 > 1 ? static_cast<int>(b.hi >> 23) : 1;
  const uint32_t lo1 = b.lo + 1;  // 0 when the run has no nonzero element
  const int elo = lo1 >> 23 > 1 ? static_cast<int>(lo1 >> 23) : 1;
  return b.hi < 0x7f800000u && ehi - elo + kP + log2n <= 53;
}

// float16 needs no bound: every value is a multiple of 2^-24 below 2^16, so a double holds the
// exact sum of up to 2^13 of them.
constexpr int kHalfRunLog2 = 13;

// ---- merge -----------------------------------------------------------------------------------

// a + b for exact doubles that are multiples of 2^-149: returns fl(a + b) and hands the error
// (a + b) - fl(a + b), exact and a multiple of 2^-149 too, to sink(e) when it is nonzero.
template <class Sink>
EX_HD double merge(double a, double b, Sink&& sink) {
  const double s = a + b;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  if (e != 0.0) sink(e);
  return s;
}

// ---- digits ----------------------------------------------------------------------------------

// Adds x, a multiple of 2^-149 below 2^200 in magnitude, to the digits through add(i, v): at
// most three digits, each by less than 2^32 in magnitude.
template <class Add>
EX_HD void deposit(double x, Add&& add) {
  const uint64_t b = bits_of(x);
  const int e = static_cast<int>((b >> 52) & 0x7ff);
  if (e == 0) return;  // +-0: a nonzero multiple of 2^-149 is a normal double
  uint64_t m = (b & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);
  int s = e - 1075 - kUnit;  // x = m * 2^s units
  if (s < 0) {               // the bits shifted out are zero
    m >>= -s;
    s = 0;
  }
  const int k = s >> 5;
  const u128 v = static_cast<u128>(m) << (s & 31);  // at most 84 bits
  const int64_t p0 = static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffffffffu);
  const int64_t p1 = static_cast<int64_t>(static_cast<uint64_t>(v >> 32) & 0xffffffffu);
  const int64_t p2 = static_cast<int64_t>(static_cast<uint64_t>(v >> 64));
  const bool neg = b >> 63;
  if (p0) add(k, neg ? -p0 : p0);
  if (p1) add(k + 1, neg ? -p1 : p1);
  if (p2) add(k + 2, neg ? -p2 : p2);
}

struct Digits {
  int64_t d[kDigits];
};

EX_HD void clear(Digits& g) {
  for (int i = 0; i < kDigits; ++i) g.d[i] = 0;
}

EX_HD void deposit(Digits& g, double x) {
  deposit(x, [&](int i, int64_t v) { g.d[i] += v; });
}

// Carries: every digit but the top one to [0, 2^32); the top one keeps the sign.
EX_HD void carry(Digits& g) {
  for (int i = 0; i < kDigits - 1; ++i) {
    const int64_t c = g.d[i] >> 32;  // floor division (arithmetic shift)
    g.d[i] -= c * (int64_t(1) << 32);
    g.d[i + 1] += c;
  }
}

// The digits' value as a sign and a magnitude (u + sticky) * 2^e2 units, u's top bit at 127
// where the value has 128 bits or more (sticky: some bit below u is set). False for zero.
struct Wide {
  u128 u;
  bool sticky;
  int e2;
  bool neg;
};

EX_HD bool to_wide(Digits g, Wide& w) {
  carry(g);
  w.neg = g.d[kDigits - 1] < 0;
  if (w.neg) {
    for (int i = 0; i < kDigits; ++i) g.d[i] = -g.d[i];
    carry(g);
  }
  int t = kDigits - 1;
  while (t >= 0 && g.d[t] == 0) --t;
  if (t < 0) return false;
  u128 u = 0;  // digits t .. t-3, digit t at bits 96..127
  for (int i = t; i > t - 4; --i) u = (u << 32) | (i >= 0 ? static_cast<uint64_t>(g.d[i]) : 0);
  int e2 = 32 * (t - 3);
  const int lz = clz128(u);  // below 32
  const uint64_t next = t >= 4 ? static_cast<uint64_t>(g.d[t - 4]) : 0;
  bool sticky = false;
  if (lz) {
    u = (u << lz) | static_cast<u128>(next >> (32 - lz));
    e2 -= lz;
    sticky = ((next << lz) & 0xffffffffu) != 0;
  } else {
    sticky = next != 0;
  }
  for (int i = t - 5; i >= 0; --i) sticky |= g.d[i] != 0;
  w = {u, sticky, e2, w.neg};
  return true;
}

// ---- rounding --------------------------------------------------------------------------------

// A binary format: significand bits, exponent of the smallest subnormal, largest exponent.
struct Format {
  int p;
  int qmin;
  int emax;
};
constexpr Format kFloat32{24, -149, 127};
constexpr Format kBFloat16{8, -133, 127};
constexpr Format kFloat16{11, -24, 15};

// (u + sticky) * 2^(e2 + kUnit) (u != 0; sticky means "plus something less than one") rounded
// to nearest, ties to even, in format f, as a double (which holds every value of f exactly).
// sticky may be set only where u has more than f.p + 1 bits.
EX_HD double round_to(u128 u, bool sticky, int e2, Format f) {
  const int h = 127 - clz128(u);
  const int e = e2 + kUnit;  // the exponent of u's bit 0
  int q = e + h - (f.p - 1);  // the exponent of the result's last bit
  if (q < f.qmin) q = f.qmin;
  const int d = q - e;  // bits dropped
  uint64_t keep;
  if (d <= 0) {
    keep = static_cast<uint64_t>(u << -d);  // exact: fewer than f.p bits
  } else if (d > 128) {
    return 0.0;  // below half of the smallest subnormal
  } else {
    const u128 k = d == 128 ? 0 : u >> d;
    const u128 rem = d == 128 ? u : u - (k << d);
    const u128 half = static_cast<u128>(1) << (d - 1);
    keep = static_cast<uint64_t>(k);
    if (rem > half || (rem == half && (sticky || (keep & 1)))) ++keep;
  }
  const double r = ldexp(static_cast<double>(keep), q);  // keep <= 2^p: exact
  return r >= ldexp(1.0, f.emax + 1) ? INFINITY : r;
}

// Flags of the elements that never enter a run.
constexpr int kNaN = 1, kPosInf = 2, kNegInf = 4;

EX_HD void flag_special(int& flags, uint32_t pattern) {  // pattern: exponent all ones
  flags |= (pattern & 0x7fffffu) ? kNaN : (pattern >> 31) ? kNegInf : kPosInf;
}

EX_HD bool special_result(int flags, double& r) {
  if (!flags) return false;
  r = (flags & kNaN) || (flags & kPosInf && flags & kNegInf) ? NAN
      : (flags & kPosInf)                                    ? INFINITY
                                                             : -INFINITY;
  return true;
}

// The exact sum s + digits (digits may be null: nothing deposited), rounded once to f.
EX_HD double round_sum(double s, const Digits* g, int flags, Format f) {
  double r;
  if (special_result(flags, r)) return r;
  if (!g && f.p == 24) return static_cast<double>(static_cast<float>(s));  // s is exact
  Digits c;
  if (g)
    c = *g;
  else
    clear(c);
  deposit(c, s);
  Wide w;
  if (!to_wide(c, w)) return 0.0;
  r = round_to(w.u, w.sticky, w.e2, f);
  return w.neg ? -r : r;
}

// The exact sum divided by n (n >= 1), rounded once to f. The magnitude is taken to 128 bits
// (plus sticky) and divided as integers: the quotient has at least 64 bits, and no midpoint of f
// lies strictly between the truncated and the exact quotient (a midpoint times n has at most
// 25 + 64 bits, all above the 128-bit window's last bit).
EX_HD double round_mean(double s, const Digits* g, int flags, uint64_t n, Format f) {
  double r;
  if (special_result(flags, r)) return r;
  Digits c;
  if (g)
    c = *g;
  else
    clear(c);
  deposit(c, s);
  Wide w;
  if (!to_wide(c, w)) return 0.0;
  const int lz = clz128(w.u);
  const u128 u = w.u << lz;
  const u128 quot = u / n;
  const bool sticky = w.sticky || u - quot * n != 0;
  r = round_to(quot, sticky, w.e2 - lz, f);
  return w.neg ? -r : r;
}

}  // namespace exact
