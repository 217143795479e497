// What the CPU's vector paths share (sum_leaves.h, extreme_leaves.h): the instruction sets, GCC
// vector types, unaligned loads and the prefetch of contiguous leaf loops. Plain C++; no torch.
#pragma once

#include <cstdint>
#include <cstring>

namespace treduce {
namespace cpu {

// The instruction sets of the vector paths; kScalar has none (the caller's scalar loops run).
enum class Isa { kScalar, kAvx2, kAvx512 };

// How far ahead the CPU's contiguous leaf loops prefetch. 2-core Xeon VM (AVX-512), 16M float32 sum
// at one thread: 0.68x torch without, 0.81-0.82x at 2 KB, 0.82-0.88x at 4 KB, 0.83-0.87x at 8 KB;
// see docs/perf-log.md.
constexpr int kPrefetchBytes = 4096;

// How far ahead float64's compensated leaves prefetch, a slice per step of the batch's loop (the
// batch reads eight leaves side by side). 2-core Xeon VM, 16M float64 sum at one thread:
// 0.42x torch with the batch's 4 KB prefetched at its start, 0.84-0.86x spread at 4 KB ahead,
// 0.91x at 8 KB, 0.89-0.93x at 16 KB; see docs/perf-log.md.
constexpr int kCompPrefetchBytes = 8192;

// Prefetches the `bytes` that lie `distance` bytes after p (for a loop about to read
// p[0, bytes)). Always inlined: GCC 12 drops the prefetches of a plain inline function that an
// always-inlined helper calls, which all the vector paths' helpers are.
[[gnu::always_inline]] inline void prefetch_ahead(const void* p, int bytes,
                                                  int distance = kPrefetchBytes) {
  for (int c = 0; c < bytes; c += 64)
    __builtin_prefetch(static_cast<const char*>(p) + distance + c);
}

#if defined(__x86_64__)
// The vector helpers of the CPU paths are always inlined into a function of one instruction set,
// so no vector crosses a call: GCC's note that passing one would change the ABI does not apply.
// Each header that defines such helpers wraps them in TREDUCE_VEC_BEGIN / TREDUCE_VEC_END. A
// helper that returns a vector by value still draws the note at its callers, outside the
// wrapped lines, so the helpers take vectors by reference and return them through out
// parameters (load_vec excepted: it returns its template parameter, which GCC does not flag).
#define TREDUCE_VEC_BEGIN \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wpsabi\"")
#define TREDUCE_VEC_END _Pragma("GCC diagnostic pop")

TREDUCE_VEC_BEGIN
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
// The halves of a vector, as vectors of half the lanes.
template <class V, class H>
[[gnu::always_inline]] inline void halves(const V& v, H& lo, H& hi) {
  static_assert(2 * sizeof(H) == sizeof(V));
  std::memcpy(&lo, &v, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
}
TREDUCE_VEC_END
#endif  // __x86_64__

}  // namespace cpu
}  // namespace treduce
