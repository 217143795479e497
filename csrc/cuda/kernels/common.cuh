// common.cuh: the pieces every reduction kernel is built from. Raw CUDA, nothing from torch.
//
//   to_acc / from_acc   storage type <-> accumulator (exact for every input; rounding on store)
//   Vec<T, N>           an aligned vector of N elements, loaded with one 16-byte instruction
//   fold<Op>            one loaded element into an accumulator (with its logical index r for the
//                       ops that need one: argmax, argmin)
//   fold_vec<Op>        a loaded vector of one output's consecutive elements into its accumulator:
//                       max/min of half or bfloat16 pairs first, with the packed instructions
//   ThreadFold          one thread's fold of vectors and single elements (rows_partial);
//                       argmax/argmin keep the best vector whole and search it once, at the end
//   load_policy/load_in the input's loads: 16-byte ones with an L2 policy (evict-first per launch)
//   shfl_down, shfl_idx warp shuffles for any accumulator type
//   group_reduce        reduce across groups of G consecutive threads: the tree in shared memory
//                       with sequential addressing (the stride halves, so the active threads stay
//                       packed in each group's first warps) down to 32 values, then warp shuffles
//   walk_offsets        the offsets of r, r + step, ... through an IndexMap: a pointer bump for one
//                       dim, a Walker (no divisions) for several
//   arrive_last         the cross-block combine: publish partials, count arrivals, and tell the
//                       last block of a tile that it may combine them; it resets the counter
//   cluster_*           thread-block clusters (sm_90): the cluster barrier, the block's rank, and
//                       stores into another block's shared memory that complete on its mbarrier,
//                       for combines without global memory
//
// Cost notes: group_reduce takes log2(G) steps, of which log2(G/32) need a __syncthreads(); the
// cross-block combine adds one atomic per block and one read of S partials per output, all in the
// same launch. No floating-point atomics: each partial goes to its own slot and the last block
// combines them in a fixed order, so results repeat bit for bit for a given launch configuration.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "../../geometry.h"
#include "../../reduce_ops.h"

namespace treduce {

constexpr unsigned kFullMask = 0xffffffffu;

template <class acc_t, class T>
__device__ __forceinline__ acc_t to_acc(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return static_cast<acc_t>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return static_cast<acc_t>(__bfloat162float(v));
  else
    return static_cast<acc_t>(v);
}

// float8 as torch converts: without saturation (cuda_fp8.h's constructors saturate to the largest
// finite value). float8_e5m2 keeps infinities; float8_e4m3fn, which has none, gives NaN past its
// range, as c10::Float8_e4m3fn does.
template <class out_t, class acc_t>
__device__ __forceinline__ out_t fp8_nosat(acc_t v) {
  constexpr __nv_fp8_interpretation_t kind =
      std::is_same_v<out_t, __nv_fp8_e5m2> ? __NV_E5M2 : __NV_E4M3;
  out_t r;
  if constexpr (std::is_same_v<acc_t, double>)
    r.__x = __nv_cvt_double_to_fp8(v, __NV_NOSAT, kind);
  else
    r.__x = __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_NOSAT, kind);
  return r;
}

template <class out_t, class acc_t>
__device__ __forceinline__ out_t from_acc(acc_t v) {
  if constexpr (std::is_same_v<out_t, __half>)
    return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<out_t, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<out_t, bool>)
    return v != acc_t(0);
  else if constexpr (std::is_same_v<out_t, __nv_fp8_e4m3> || std::is_same_v<out_t, __nv_fp8_e5m2>)
    return fp8_nosat<out_t>(v);
  else
    return static_cast<out_t>(v);
}

// Whether Op::reduce(acc, v) is Op::combine(acc, double(v)) (WideSumOp::kWidens).
template <class Op, class = void>
struct widens : std::false_type {};
template <class Op>
struct widens<Op, std::void_t<decltype(Op::kWidens)>> : std::bool_constant<Op::kWidens> {};

// One element x, the r-th of its output's reduced elements (logical order), into `acc`. For ops
// without kNeedsIndex r is unused (the canonical sums leave it out) and its arithmetic
// disappears. A float16 or bfloat16 value that a double sum widens goes to double in one
// conversion (F2F.F64.F16, F2F.F64.BF16) instead of two instructions (HADD2.F32 or a shift, then
// F2F.F64.F32): the same exact value, so the same sum.
template <class Op, class T>
__device__ __forceinline__ typename Op::acc_t fold(typename Op::acc_t acc, T x, int64_t r = 0) {
  using value_t = typename Op::value_t;
  constexpr bool k16 = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
  if constexpr (k16 && widens<Op>::value && std::is_same_v<typename Op::acc_t, double>) {
    double d;
    if constexpr (std::is_same_v<T, __half>)
      asm("cvt.f64.f16 %0, %1;" : "=d"(d) : "h"(__half_as_ushort(x)));
    else
      asm("cvt.f64.bf16 %0, %1;" : "=d"(d) : "h"(__bfloat16_as_ushort(x)));
    return Op::combine(acc, d);
  } else if constexpr (Op::kNeedsIndex) {
    return Op::reduce(acc, to_acc<value_t>(x), r);
  } else {
    return Op::reduce(acc, to_acc<value_t>(x));
  }
}

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// The L2 cache policy of the input's 16-byte loads (load_in): evict_first when the launch asks it
// (Geometry::evict_first, set by launch_geometry), so that the streamed input leaves L2 before
// the lines that earlier kernels left there, dirty ones included, whose write-back otherwise
// competes with the reads; else evict_unchanged, which measured the same as a plain load
// (evict_normal measured 12% slower on 1 GB). Made next to each batch of loads
// (volatile: not hoisted out of the loop), so that it holds no register across the loop. T is
// the loaded type: for loads of fewer than 16 bytes, which load_in reads plain, it makes nothing.
template <class T>
__device__ __forceinline__ uint64_t load_policy(bool evict_first) {
  if constexpr (sizeof(T) == 16) {
    uint64_t first, unchanged;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(first));
    asm volatile("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(unchanged));
    return evict_first ? first : unchanged;
  } else {
    return 0;
  }
}

// One read-only load of the input: 16-byte loads with the cache policy `pol` (one instruction,
// `pol` from load_policy<T>);
// smaller ones plain (lines that several loads share, as in scalar walks and misaligned staging,
// lost up to 16% evict-first).
template <class T>
__device__ __forceinline__ T load_in(const T* p, uint64_t pol) {
  if constexpr (sizeof(T) == 16) {
    uint4 v;
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(pol));
    T out;
    memcpy(&out, &v, 16);
    return out;
  } else {
    return *p;
  }
}

// Max/min over half or bfloat16 inputs: pairs of values go through one packed, NaN-propagating
// instruction (__hmax2_nan, __hmin2_nan), exact since the result is one of the inputs.
template <class Op, class T>
struct packed_extreme : std::false_type {};
template <bool kMax>
struct packed_extreme<ExtremeOp<float, kMax>, __nv_bfloat16> : std::true_type {
  using pair_t = __nv_bfloat162;
  static constexpr bool max = kMax;
};
template <bool kMax>
struct packed_extreme<ExtremeOp<float, kMax>, __half> : std::true_type {
  using pair_t = __half2;
  static constexpr bool max = kMax;
};

// argmax/argmin: the ExtremeOp of the same direction.
template <class Op>
struct arg_extreme : std::false_type {};
template <class T, bool kMax>
struct arg_extreme<ArgExtremeOp<T, kMax>> : std::true_type {
  using extreme_op = ExtremeOp<T, kMax>;
};

// NaN-propagating max (kMax) or min of two floats: one FMNMX.NAN (sm_80 and newer). Which of two
// equal-valued zeros it returns does not matter to its users (argmax/argmin compare values).
template <bool kMax>
__device__ __forceinline__ float extreme_nan(float a, float b) {
  float r;
  if constexpr (kMax)
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  else
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// The max (or min, by E = ExtremeOp<acc, kMax>) of a vector's N values, NaN if any is NaN:
// packed pairs for half and bfloat16, a chain of selects otherwise (kFastFloat: FMNMX.NAN for
// float, whose zero sign may differ from the select chain's; for argmax/argmin only).
template <class E, class T, int N, bool kFastFloat = false>
__device__ __forceinline__ typename E::acc_t vec_extreme(const Vec<T, N>& x) {
  using acc_t = typename E::acc_t;
  using P = packed_extreme<E, T>;
  if constexpr (P::value && N % 2 == 0) {
    using pair_t = typename P::pair_t;
    const pair_t* p = reinterpret_cast<const pair_t*>(x.v);
    pair_t m = p[0];
#pragma unroll
    for (int i = 1; i < N / 2; ++i) m = P::max ? __hmax2_nan(m, p[i]) : __hmin2_nan(m, p[i]);
    return to_acc<acc_t>(P::max ? __hmax_nan(m.x, m.y) : __hmin_nan(m.x, m.y));
  } else if constexpr (kFastFloat && std::is_same_v<T, float> && std::is_same_v<acc_t, float>) {
    constexpr bool kMax = std::is_same_v<E, ExtremeOp<float, true>>;
    float m = x.v[0];
#pragma unroll
    for (int j = 1; j < N; ++j) m = extreme_nan<kMax>(m, x.v[j]);
    return m;
  } else {
    acc_t m = to_acc<acc_t>(x.v[0]);
#pragma unroll
    for (int j = 1; j < N; ++j) m = E::combine(m, to_acc<acc_t>(x.v[j]));
    return m;
  }
}

// The N consecutive elements of x, the first at logical index r0, into `acc`. Max/min of half
// or bfloat16 take the vector's extreme with packed instructions.
template <class Op, class T, int N>
__device__ __forceinline__ typename Op::acc_t fold_vec(typename Op::acc_t acc, const Vec<T, N>& x,
                                                       int64_t r0) {
  if constexpr (packed_extreme<Op, T>::value && N % 2 == 0) {
    return Op::reduce(acc, vec_extreme<Op>(x));
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) acc = fold<Op>(acc, x.v[j], r0 + j);
    return acc;
  }
}

// One thread's fold of its share of an output: whole vectors of consecutive elements (vec, the
// first element's logical index r0) and single elements (one), each kind in increasing r; then
// result(). For most ops both go into one accumulator in the order they come.
template <class Op, class T, int N, bool = arg_extreme<Op>::value>
struct ThreadFold {
  using acc_t = typename Op::acc_t;
  acc_t acc = Op::identity();
  __device__ __forceinline__ void vec(const Vec<T, N>& x, int64_t r0) {
    acc = fold_vec<Op>(acc, x, r0);
  }
  __device__ __forceinline__ void one(T x, int64_t r) { acc = fold<Op>(acc, x, r); }
  __device__ __forceinline__ acc_t result() const { return acc; }
};

// argmax/argmin: a vector's extreme is taken first (packed or FMNMX.NAN where there are such
// instructions), and the first vector that holds the best value so far is kept whole, branch
// free; its first position of that value is found once, in result(). The same answer as folding
// element by element in increasing r (a vector replaces the kept one only when its extreme is
// strictly better, or the first NaN), at a few instructions per vector instead of ~10 per element
// and without the divergent search per improving vector that a thread with few vectors (a
// vocabulary argmax split over many blocks) met at almost every vector. Single elements go into
// their own accumulator; combine() does not depend on the order of its arguments.
template <class Op, class T, int N>
struct ThreadFold<Op, T, N, true> {
  using acc_t = typename Op::acc_t;
  using value_t = typename Op::value_t;
  using E = typename arg_extreme<Op>::extreme_op;
  acc_t acc = Op::identity();   // single elements
  acc_t best = Op::identity();  // the kept vector's extreme and its first element's index
  static constexpr int kWords = sizeof(Vec<T, N>) / 4;
  unsigned kept[kWords] = {};  // the kept vector's bits, selected a 32-bit word at a time
  __device__ __forceinline__ void vec(const Vec<T, N>& x, int64_t r0) {
    const acc_t c = Op::reduce(best, vec_extreme<E, T, N, true>(x), r0);
    const bool take = c.index != best.index;
    const unsigned* w = reinterpret_cast<const unsigned*>(&x);
#pragma unroll
    for (int i = 0; i < kWords; ++i) kept[i] = take ? w[i] : kept[i];
    best = c;
  }
  __device__ __forceinline__ void one(T x, int64_t r) { acc = fold<Op>(acc, x, r); }
  __device__ __forceinline__ acc_t result() const {
    if (best.index == Op::identity().index) return acc;
    Vec<T, N> x;
    memcpy(&x, kept, sizeof(x));
    const bool nan = is_nan(best.value);
    int first = N - 1;
#pragma unroll
    for (int j = N - 1; j >= 0; --j) {
      const value_t v = to_acc<value_t>(x.v[j]);
      if (nan ? is_nan(v) : v == best.value) first = j;
    }
    return Op::combine(acc, acc_t{best.value, best.index + first});
  }
};

template <class T>
constexpr int vec_width() {
  return 16 / static_cast<int>(sizeof(T));
}

// A warp shuffle `shfl` (a generic lambda over the value or one 32-bit word of it) of any
// trivially copyable accumulator.
template <class T, class F>
__device__ __forceinline__ T shfl_any(T v, F&& shfl) {
  if constexpr (std::is_arithmetic_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    return shfl(v);
  } else {  // one 32-bit word at a time
    static_assert(sizeof(T) % 4 == 0, "accumulator size must be a multiple of 4 bytes");
    int words[sizeof(T) / 4];
    memcpy(words, &v, sizeof(T));
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i) words[i] = shfl(words[i]);
    memcpy(&v, words, sizeof(T));
    return v;
  }
}

template <class T>
__device__ __forceinline__ T shfl_down(T v, int offset, int width) {
  return shfl_any(v, [&](auto w) { return __shfl_down_sync(kFullMask, w, offset, width); });
}

// Lane `src`'s value (all lanes must call it).
template <class T>
__device__ __forceinline__ T shfl_idx(T v, int src) {
  return shfl_any(v, [&](auto w) { return __shfl_sync(kFullMask, w, src); });
}

// A load that bypasses L1, for partials written by other blocks of the same launch.
template <class T>
__device__ __forceinline__ T load_cg(const T* p) {
  if constexpr (std::is_arithmetic_v<T>) {
    return __ldcg(p);
  } else {  // a struct accumulator (value, index), one 32-bit word at a time
    static_assert(sizeof(T) % 4 == 0, "accumulator size must be a multiple of 4 bytes");
    int words[sizeof(T) / 4];
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i)
      words[i] = __ldcg(reinterpret_cast<const int*>(p) + i);
    T v;
    memcpy(&v, words, sizeof(T));
    return v;
  }
}

// Reduces v across each group of G consecutive threads (G a power of two dividing the block);
// the group's first thread gets the result. `smem` holds one acc_t per thread. Every thread of the
// block must call it. Combination order is fixed: lower thread indices cover earlier elements.
template <class Op, class acc_t>
__device__ __forceinline__ acc_t group_reduce(acc_t v, int G, acc_t* smem, int tid) {
  if (G > 32) {
    smem[tid] = v;
    __syncthreads();
    const int lane = tid & (G - 1);
    for (int s = G / 2; s >= 32; s >>= 1) {
      if (lane < s) smem[tid] = Op::combine(smem[tid], smem[tid + s]);
      __syncthreads();
    }
    v = smem[tid];
  }
  const int width = G < 32 ? G : 32;
  for (int offset = width / 2; offset > 0; offset >>= 1)
    v = Op::combine(v, shfl_down(v, offset, width));
  return v;
}

// Runs body(next) over a Walker of `m` from r, each next() the offset of the walk's next position
// (digits: the step, step_digits): the many-dim case of walk_offsets and rows.cuh's walk_runs.
template <class Body>
__device__ __forceinline__ void walk_walker(const IndexMap& m, int64_t r, const StepDigits& digits,
                                            Body&& body) {
  Walker w(m, r);
  body([&] {
    const int64_t o = w.offset(m);
    w.advance(m, digits);
    return o;
  });
}

// Runs body(next), where each next() returns the input offset of the next reduced element of the
// walk r, r + step, r + 2 step, ... through `m`. One reduced dim (the usual case after merging)
// gets a plain offset bump; several get a Walker, whose digits are `step` split by step_digits().
// The two specialisations keep the one-dim loop as tight as a hand-written one.
template <class Body>
__device__ __forceinline__ void walk_offsets(const IndexMap& m, int64_t r, int64_t step,
                                             const StepDigits& digits, Body&& body) {
  if (m.ndim == 1) {
    const int64_t delta = step * m.in_strides[0];
    int64_t off = r * m.in_strides[0];
    body([&] {
      const int64_t o = off;
      off += delta;
      return o;
    });
  } else {
    walk_walker(m, r, digits, body);
  }
}

// Call after this block has written its partials for `*counter`'s tile; it counts as n arrivals
// (canon_kernel: the n splits it took). Returns true, in every thread, for the block whose
// arrival completes the `expected`; that block then reads all partials (with load_cg). The
// counter is back at zero when the kernel ends, ready for the next launch.
// Thread-block clusters (sm_90; the launchers use them only there). Every thread of every block
// of the cluster must take part in each barrier phase: arrive, then wait. A relaxed arrival
// orders nothing (a first phase that only says every block has started, before any block touches
// another's shared memory); the default arrival releases this thread's writes and the wait
// acquires the others'.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
// The block's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}
// An mbarrier (8 bytes of shared memory, 8-byte aligned) that completes its first phase after
// `count` arrivals and the bytes they expect; the fence makes it visible to the cluster's other
// blocks once the barrier phase that follows orders them after it (arrive, even relaxed, here;
// wait there).
__device__ __forceinline__ void cluster_bar_init(uint64_t* bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
// This thread's arrival at `bar`, which then also waits for `bytes` of asynchronous stores.
__device__ __forceinline__ void cluster_bar_expect(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes)
               : "memory");
#endif
}
// Waits until phase `parity` of `bar` completes; the stores it counted are then visible.
__device__ __forceinline__ void cluster_bar_wait(uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(b), "r"(parity)
        : "memory");
  } while (!done);
#endif
}
// Stores `x` into shared variable `dst` of the cluster's block `rank`, a 32-bit word at a time,
// each completing its 4 bytes on that block's `bar` (st.async: no fence, no cluster barrier).
template <class T>
__device__ __forceinline__ void cluster_store_async(T* dst, const T& x, uint64_t* bar,
                                                    unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(sizeof(T) % 4 == 0, "whole 32-bit words");
  unsigned w[sizeof(T) / 4];
  memcpy(w, &x, sizeof(T));
  unsigned d, b;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(d)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(dst))), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(b)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))), "r"(rank));
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i)
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                     d + 4 * i),
                 "r"(w[i]), "r"(b)
                 : "memory");
#endif
}

// The block's threads have stored their partials; the leader counts the block's n arrivals with
// one acquire-release atomic at GPU scope: the barrier before it orders every thread's stores
// before its release, and the barrier after it orders its acquire (of the other blocks' released
// stores) before the last block's reads. A __threadfence() in every thread before the barrier
// and again in the last block measured 0.15-0.45 µs slower per launch.
__device__ __forceinline__ bool arrive_last(unsigned* counter, unsigned expected, unsigned n = 1) {
  __shared__ bool last;
  __syncthreads();
  const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
  if (leader) {
    unsigned prev;
    asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], %2;"
                 : "=r"(prev)
                 : "l"(counter), "r"(n)
                 : "memory");
    last = prev + n == expected;
    if (last) *counter = 0;  // every block of this tile has arrived
  }
  __syncthreads();
  return last;
}

}  // namespace treduce
