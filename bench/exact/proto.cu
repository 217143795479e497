// proto.cu: the exact-sum prototype on the GPU (float32; bfloat16 and float16 rows), registered as
// torch.ops.exact_proto.exact_sum for bench/exact/proto.py. The arithmetic is exact.h's; this file
// is the work split. `variant` picks the launch rules being measured (exact_sum's comment).
//
//   rows_kernel   rows of K contiguous elements (a full sum is one row); grid (splits, rows);
//                 float32, bfloat16 and float16, the result in the input's dtype.
//                 Each thread keeps a run over 4 loads of 16 bytes per iteration, two
//                 double chains and a level-2 double for flushed runs; the block merges the
//                 threads' doubles (TwoSum, errors to shared digits); with splits > 1 the last
//                 block of a row merges the splits' doubles and any digits the splits deposited.
//   warp_rows_kernel  rows of many, unsplit: one warp per row, merged by shuffles.
//   short_kernel  rows of K <= 128: K/4 lanes per row (one float4 each; K = 2: two rows per
//                 float4), merged by shuffles; a row whose merge is not exact (a TwoSum error or a
//                 run outside the bound) is summed again by one lane into local digits.
//   cols_kernel   the middle dim of (outer, K, inner), inner % 4 == 0: a block is 128 columns
//                 (32 x float4) by 8 threads along K; each thread keeps 4 runs (one bound);
//                 the 8 partials per column merge in shared memory; splits along K merge in the
//                 last block of the column tile.
//
// Nothing here orders anything: every combine is a merge whose error goes to integer digits,
// which add in any order. Counters and global digits are left zero by the block that used them.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/ATen.h>
#include <torch/library.h>

#include <map>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "exact.h"

using namespace exact;

namespace {

constexpr int kThreads = 256;
constexpr int kColsX = 32, kColsY = 8, kColsTile = 4 * kColsX;

__host__ __device__ inline int ceil_log2(int64_t n) {
  int l = 0;
  while ((int64_t(1) << l) < n) ++l;
  return l;
}

// Error terms into a block's shared digits (deposits are rare: atomics are fine).
struct SharedSink {
  unsigned long long* d;
  int* any;
  __device__ __noinline__ void operator()(double e) const {
    deposit(e, [&](int i, int64_t v) { atomicAdd(d + i, static_cast<unsigned long long>(v)); });
    *any = 1;
  }
};

struct FlagSink {  // an error only marks the result as needing the slow path
  bool* bad;
  __device__ void operator()(double) const { *bad = true; }
};

__device__ __forceinline__ void add_global(unsigned long long* g, const unsigned long long* d) {
  for (int i = 0; i < kDigits; ++i)
    if (d[i]) atomicAdd(g + i, d[i]);
}

// The lanes [0, o) merge with [o, 2o): lane 0 ends with the warp's merge.
template <class Sink>
__device__ double warp_merge(double t, const Sink& sink) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 16; o; o >>= 1) {
    const double u = __shfl_down_sync(0xffffffffu, t, o);
    if (lane < o) t = merge(t, u, sink);
  }
  return t;
}

template <class Sink>
__device__ double block_merge(double t, const Sink& sink, double* red) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  t = warp_merge(t, sink);
  if (lane == 0) red[w] = t;
  __syncthreads();
  if (w == 0) t = warp_merge(lane < kThreads / 32 ? red[lane] : 0.0, sink);
  return t;  // thread 0
}

__device__ __forceinline__ void widen4(Bound& b, const float4& q) {
  widen(b, bits_of(q.x));
  widen(b, bits_of(q.y));
  widen(b, bits_of(q.z));
  widen(b, bits_of(q.w));
}

// One thread's run state and its 16-element step.
struct ThreadRun {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0;
  Bound b;
};

// N elements (already widened to float, exactly) into the run; kP: the input's significand bits.
template <int kP, int N, class Sink>
__device__ __forceinline__ void add_n(ThreadRun& r, const float (&v)[N], int log2n,
                                      const Sink& sink, int* flags) {
  Bound nb = r.b;
#pragma unroll
  for (int j = 0; j < N; ++j) widen(nb, bits_of(v[j]));
  if (!run_exact<kP>(nb, log2n)) {  // flush the run, start a new one with these N
    r.s2 = merge(r.s2, r.s0 + r.s1, sink);
    r.s0 = r.s1 = 0.0;
    nb = Bound{};
#pragma unroll
    for (int j = 0; j < N; ++j) widen(nb, bits_of(v[j]));
    if (!run_exact<kP>(nb, log2n)) {  // the slow path: one by one
      r.b = Bound{};
#pragma unroll  // v stays in registers (a loop over v[j] would put v in local memory)
      for (int j = 0; j < N; ++j) {
        const uint32_t p = bits_of(v[j]);
        if ((p & 0x7f800000u) == 0x7f800000u)
          atomicOr(flags, p & 0x7fffffu ? kNaN : p >> 31 ? kNegInf : kPosInf);
        else
          r.s2 = merge(r.s2, static_cast<double>(v[j]), sink);
      }
      return;
    }
  }
  r.b = nb;
#pragma unroll
  for (int j = 0; j < N / 2; ++j) r.s0 += static_cast<double>(v[j]);
#pragma unroll
  for (int j = N / 2; j < N; ++j) r.s1 += static_cast<double>(v[j]);
}

// The input types: float32, bfloat16, float16; each widens exactly to float.
template <class T> struct In;
template <> struct In<float> {
  static constexpr int kP = 24;
  static constexpr Format kFormat = kFloat32;
  __device__ static float widen(float v) { return v; }
  __device__ static float narrow(double v) { return static_cast<float>(v); }
};
template <> struct In<__nv_bfloat16> {
  static constexpr int kP = 8;
  static constexpr Format kFormat = kBFloat16;
  __device__ static float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 narrow(double v) { return __float2bfloat16_rn(static_cast<float>(v)); }
};
template <> struct In<__half> {
  static constexpr int kP = 11;
  static constexpr Format kFormat = kFloat16;
  __device__ static float widen(__half v) { return __half2float(v); }
  __device__ static __half narrow(double v) { return __float2half_rn(static_cast<float>(v)); }
};
// (narrow: v is already a value of the format, so both conversions are exact.)

// ---- rows ------------------------------------------------------------------------------------

struct RowsArgs {
  const void* x;
  void* out;
  int64_t K;           // elements per row (a multiple of 16 bytes)
  int64_t chunk;       // elements per split (a multiple of 16 bytes)
  int splits;
  int log2n;           // bound on log2 of the elements one thread adds
  double* part;        // [rows][splits] the splits' doubles
  int* part_flags;     // [rows][splits]
  unsigned long long* digits;  // [rows][kDigits], zero between calls
  int* deposited;      // [rows], zero between calls
  unsigned* counters;  // [rows], zero between calls
  bool evict_first;    // 16-byte loads with the L2 evict-first policy (inputs under 256 MB)
};

// One 16-byte read-only load, evict-first in L2 when asked (the engine's load_in policy).
__device__ __forceinline__ uint4 load16(const void* p, bool evict_first) {
  uint4 v;
  if (evict_first) {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(pol));
  } else {
    v = __ldg(reinterpret_cast<const uint4*>(p));
  }
  return v;
}

// One step of a thread's run: 16-byte vectors first, first + kStride, ... (4 of them, those at
// nv or past it as zeros), widened exactly to float and added.
template <class T, int kStride, class V, class Sink>
__device__ __forceinline__ void run_step(ThreadRun& r, const V* p, int64_t first, int64_t nv,
                                       const RowsArgs& a, const Sink& sink, int* flags) {
  constexpr int kVec = 16 / sizeof(T);
  V q[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t i = first + j * kStride;
    if (i < nv) {
      const uint4 u = load16(p + i, a.evict_first);
      memcpy(&q[j], &u, 16);
    } else {
      memset(&q[j], 0, 16);
    }
  }
  float v[4 * kVec];
#pragma unroll
  for (int j = 0; j < 4 * kVec; ++j) v[j] = In<T>::widen(q[j / kVec].v[j % kVec]);
  add_n<In<T>::kP>(r, v, a.log2n, sink, flags);
}

template <class T>
__global__ void __launch_bounds__(kThreads) rows_kernel(RowsArgs a) {
  constexpr int kVec = 16 / sizeof(T);  // elements per 16-byte load
  struct alignas(16) V { T v[kVec]; };
  __shared__ unsigned long long dig[kDigits];
  __shared__ int any, flags;
  __shared__ double red[kThreads / 32];
  __shared__ bool last;
  if (threadIdx.x < kDigits) dig[threadIdx.x] = 0;
  if (threadIdx.x == 0) any = flags = 0;
  __syncthreads();
  const SharedSink sink{dig, &any};

  const int64_t row = blockIdx.y;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * a.chunk;
  const int64_t c1 = min(c0 + a.chunk, a.K);
  const V* p = reinterpret_cast<const V*>(static_cast<const T*>(a.x) + row * a.K + c0);
  const int64_t nv = (c1 - c0) / kVec;
  ThreadRun r;
  for (int64_t base = 0; base < nv; base += 4 * kThreads) {
    run_step<T, kThreads>(r, p, base + threadIdx.x, nv, a, sink, &flags);
  }
  double t = merge(r.s2, r.s0 + r.s1, sink);
  t = block_merge(t, sink, red);
  __syncthreads();  // every deposit is in dig, every flag in flags
  if (a.splits == 1) {
    if (threadIdx.x == 0) {
      Digits g;
      for (int i = 0; i < kDigits; ++i) g.d[i] = static_cast<int64_t>(dig[i]);
      static_cast<T*>(a.out)[row] = In<T>::narrow(round_sum(t, any ? &g : nullptr, flags, In<T>::kFormat));
    }
    return;
  }
  // Publish this split; the last block of the row merges them.
  if (threadIdx.x == 0) {
    a.part[row * a.splits + blockIdx.x] = t;
    a.part_flags[row * a.splits + blockIdx.x] = flags;
    if (any) {
      add_global(a.digits + row * kDigits, dig);
      atomicExch(a.deposited + row, 1);
    }
    __threadfence();
    last = atomicAdd(a.counters + row, 1u) == static_cast<unsigned>(a.splits - 1);
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (threadIdx.x < kDigits) dig[threadIdx.x] = 0;
  if (threadIdx.x == 0) any = flags = 0;
  __syncthreads();
  double u = 0.0;
  int f = 0;
  for (int s = threadIdx.x; s < a.splits; s += kThreads) {
    u = merge(u, __ldcg(a.part + row * a.splits + s), sink);
    f |= __ldcg(a.part_flags + row * a.splits + s);
  }
  if (f) atomicOr(&flags, f);
  u = block_merge(u, sink, red);
  __syncthreads();
  if (threadIdx.x == 0) {
    Digits g;
    const bool dep = any || __ldcg(a.deposited + row);
    for (int i = 0; i < kDigits; ++i) {
      g.d[i] = static_cast<int64_t>(dig[i] + __ldcg(a.digits + row * kDigits + i));
      a.digits[row * kDigits + i] = 0;
    }
    a.deposited[row] = 0;
    a.counters[row] = 0;
    static_cast<T*>(a.out)[row] = In<T>::narrow(round_sum(u, dep ? &g : nullptr, flags, In<T>::kFormat));
  }
}

// Rows of many: one warp per row, merged by shuffles, digits per warp in shared memory; no
// block-wide barrier, so a block's warps start and finish their rows independently.
template <class T>
__global__ void __launch_bounds__(kThreads) warp_rows_kernel(RowsArgs a, int64_t rows) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kWarps = kThreads / 32;
  struct alignas(16) V { T v[kVec]; };
  __shared__ unsigned long long dig[kWarps][kDigits];
  __shared__ int any[kWarps], flags[kWarps];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + w;
  if (row >= rows) return;  // warp-uniform
  if (lane < kDigits) dig[w][lane] = 0;
  if (lane == 0) any[w] = flags[w] = 0;
  __syncwarp();
  const SharedSink sink{dig[w], &any[w]};
  const V* p = reinterpret_cast<const V*>(static_cast<const T*>(a.x) + row * a.K);
  const int64_t nv = a.K / kVec;
  ThreadRun r;
  for (int64_t base = 0; base < nv; base += 4 * 32) {
    run_step<T, 32>(r, p, base + lane, nv, a, sink, &flags[w]);
  }
  double t = merge(r.s2, r.s0 + r.s1, sink);
  t = warp_merge(t, sink);
  __syncwarp();  // every deposit is in dig[w], every flag in flags[w]
  if (lane == 0) {
    Digits g;
    for (int i = 0; i < kDigits; ++i) g.d[i] = static_cast<int64_t>(dig[w][i]);
    static_cast<T*>(a.out)[row] =
        In<T>::narrow(round_sum(t, any[w] ? &g : nullptr, flags[w], In<T>::kFormat));
  }
}

// ---- short rows ------------------------------------------------------------------------------

// One row again, one lane, every element into digits: the rare rows whose fast merge was inexact.
__device__ float row_slow(const float* x, int K) {
  Digits g;
  clear(g);
  int flags = 0;
  for (int k = 0; k < K; ++k) {
    const uint32_t p = bits_of(x[k]);
    if ((p & 0x7f800000u) == 0x7f800000u)
      flag_special(flags, p);
    else
      deposit(g, static_cast<double>(x[k]));
  }
  return static_cast<float>(round_sum(0.0, &g, flags, kFloat32));
}

template <int kK>
__global__ void __launch_bounds__(kThreads) short_kernel(const float* x, float* out, int64_t rows) {
  constexpr int kLanes = kK >= 4 ? kK / 4 : 1;  // lanes per row
  const int64_t n4 = rows * kK / 4;
  const int lane = threadIdx.x & 31;
  const int64_t warp0 = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x - lane);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const float4* p = reinterpret_cast<const float4*>(x);
  for (int64_t base = warp0; base < n4; base += 4 * stride) {
    float4 q[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t g = base + j * stride + lane;
      q[j] = g < n4 ? __ldg(p + g) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t g = base + j * stride + lane;
      if (base + j * stride >= n4) break;  // warp-uniform
      bool bad = false;
      const FlagSink sink{&bad};
      if constexpr (kK == 2) {
        const double s0 = merge(static_cast<double>(q[j].x), static_cast<double>(q[j].y), sink);
        const double s1 = merge(static_cast<double>(q[j].z), static_cast<double>(q[j].w), sink);
        if (g < n4) {  // an infinity or NaN makes a TwoSum error NaN: bad
          out[2 * g] = bad ? row_slow(x + 4 * g, 2) : static_cast<float>(s0);
          out[2 * g + 1] = bad ? row_slow(x + 4 * g + 2, 2) : static_cast<float>(s1);
        }
      } else {
        Bound b;
        widen4(b, q[j]);
        bad = !run_exact<24>(b, 2);
        double s = (static_cast<double>(q[j].x) + static_cast<double>(q[j].y)) +
                   (static_cast<double>(q[j].z) + static_cast<double>(q[j].w));
#pragma unroll
        for (int o = 1; o < kLanes; o <<= 1) {
          const double u = __shfl_xor_sync(0xffffffffu, s, o);
          s = merge(s, u, sink);
          bad |= __shfl_xor_sync(0xffffffffu, static_cast<int>(bad), o) != 0;
        }
        if (g < n4 && g % kLanes == 0) {
          const int64_t row = g / kLanes;
          out[row] = bad ? row_slow(x + row * kK, kK) : static_cast<float>(s);
        }
      }
    }
  }
}

// ---- columns ---------------------------------------------------------------------------------

struct ColsArgs {
  const float* x;
  float* out;
  int64_t K, inner, C;  // C = outer * inner columns
  int64_t chunk;        // rows of K per split
  int splits;
  int log2n;
  double* part;         // [splits][C]
  int* part_flags;      // [splits][C]
  unsigned long long* digits;  // [C][kDigits], zero between calls
  int* deposited;       // [C]
  unsigned* counters;   // [tiles]
};

__global__ void __launch_bounds__(kColsX* kColsY) cols_kernel(ColsArgs a) {
  __shared__ unsigned long long dig[kColsTile][kDigits];
  __shared__ int any[kColsTile], flags[kColsTile];
  __shared__ double red[kColsY][kColsTile];
  __shared__ bool last;
  const int tid = threadIdx.y * kColsX + threadIdx.x;
  for (int i = tid; i < kColsTile * kDigits; i += kColsX * kColsY) (&dig[0][0])[i] = 0;
  for (int i = tid; i < kColsTile; i += kColsX * kColsY) any[i] = flags[i] = 0;
  __syncthreads();

  const int64_t c = static_cast<int64_t>(blockIdx.y) * kColsTile + 4 * threadIdx.x;
  const bool valid = c < a.C;
  const int64_t o = c / a.inner, i = c % a.inner;
  const int64_t k0 = blockIdx.x * a.chunk, k1 = min(k0 + a.chunk, a.K);
  const float* base = a.x + o * a.K * a.inner + i;
  const int lc = 4 * threadIdx.x;  // local column
  double s[4] = {0, 0, 0, 0}, s2[4] = {0, 0, 0, 0};
  Bound b;
  for (int64_t k = k0 + threadIdx.y; k < k1; k += 4 * kColsY) {
    float4 q[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t kk = k + j * kColsY;
      q[j] = valid && kk < k1 ? __ldg(reinterpret_cast<const float4*>(base + kk * a.inner))
                              : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    Bound nb = b;
#pragma unroll
    for (int j = 0; j < 4; ++j) widen4(nb, q[j]);
    if (!run_exact<24>(nb, a.log2n)) {
      for (int m = 0; m < 4; ++m) {
        s2[m] = merge(s2[m], s[m], SharedSink{dig[lc + m], &any[lc + m]});
        s[m] = 0.0;
      }
      nb = Bound{};
#pragma unroll
      for (int j = 0; j < 4; ++j) widen4(nb, q[j]);
      if (!run_exact<24>(nb, a.log2n)) {  // one by one
        b = Bound{};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float v[4] = {q[j].x, q[j].y, q[j].z, q[j].w};
#pragma unroll
          for (int m = 0; m < 4; ++m) {
            const uint32_t pt = bits_of(v[m]);
            if ((pt & 0x7f800000u) == 0x7f800000u)
              atomicOr(&flags[lc + m], pt & 0x7fffffu ? kNaN : pt >> 31 ? kNegInf : kPosInf);
            else
              s2[m] = merge(s2[m], static_cast<double>(v[m]), SharedSink{dig[lc + m], &any[lc + m]});
          }
        }
        continue;
      }
    }
    b = nb;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s[0] += static_cast<double>(q[j].x);
      s[1] += static_cast<double>(q[j].y);
      s[2] += static_cast<double>(q[j].z);
      s[3] += static_cast<double>(q[j].w);
    }
  }
  for (int m = 0; m < 4; ++m)
    red[threadIdx.y][lc + m] = merge(s2[m], s[m], SharedSink{dig[lc + m], &any[lc + m]});
  __syncthreads();
  // Thread tid < kColsTile merges its column's kColsY partials.
  double t = 0.0;
  const int64_t col = static_cast<int64_t>(blockIdx.y) * kColsTile + tid;
  if (tid < kColsTile) {
    const SharedSink sink{dig[tid], &any[tid]};
    for (int y = 0; y < kColsY; ++y) t = merge(t, red[y][tid], sink);
  }
  __syncthreads();
  if (a.splits == 1) {
    if (tid < kColsTile && col < a.C) {
      Digits g;
      for (int d = 0; d < kDigits; ++d) g.d[d] = static_cast<int64_t>(dig[tid][d]);
      a.out[col] = static_cast<float>(round_sum(t, any[tid] ? &g : nullptr, flags[tid], kFloat32));
    }
    return;
  }
  if (tid < kColsTile && col < a.C) {
    a.part[blockIdx.x * a.C + col] = t;
    a.part_flags[blockIdx.x * a.C + col] = flags[tid];
    if (any[tid]) {
      add_global(a.digits + col * kDigits, dig[tid]);
      atomicExch(a.deposited + col, 1);
    }
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) last = atomicAdd(a.counters + blockIdx.y, 1u) == static_cast<unsigned>(a.splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (tid < kColsTile && col < a.C) {
    for (int d = 0; d < kDigits; ++d) dig[tid][d] = 0;
    any[tid] = 0;
    const SharedSink sink{dig[tid], &any[tid]};
    double u = 0.0;
    int f = 0;
    for (int sp = 0; sp < a.splits; ++sp) {
      u = merge(u, __ldcg(a.part + sp * a.C + col), sink);
      f |= __ldcg(a.part_flags + sp * a.C + col);
    }
    Digits g;
    const bool dep = any[tid] || __ldcg(a.deposited + col);
    for (int d = 0; d < kDigits; ++d) {
      g.d[d] = static_cast<int64_t>(dig[tid][d] + __ldcg(a.digits + col * kDigits + d));
      a.digits[col * kDigits + d] = 0;
    }
    a.deposited[col] = 0;
    a.out[col] = static_cast<float>(round_sum(u, dep ? &g : nullptr, f, kFloat32));
  }
  if (tid == 0) a.counters[blockIdx.y] = 0;
}

// ---- host ------------------------------------------------------------------------------------

// Zeroed scratch that the kernels leave zeroed: digits, flags and counters, grown as needed.
at::Tensor& zeroed(int64_t bytes, const at::Device& dev) {
  static std::map<int, at::Tensor> cache;
  at::Tensor& t = cache[dev.index()];
  if (!t.defined() || t.numel() < bytes)
    t = at::zeros({std::max<int64_t>(bytes, 1 << 20)}, at::TensorOptions().dtype(at::kByte).device(dev));
  return t;
}

int sm_count() {
  return at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
}

// Blocks of `threads` that the GPU holds at once: the kernel's occupancy times the SMs.
template <class Kernel>
int64_t resident(Kernel kernel, int threads) {
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return static_cast<int64_t>(std::max(per_sm, 1)) * sm_count();
}

// Rows at least this many take warp_rows_kernel (variant bit 2) when they need no split.
constexpr int64_t kWarpRowsMin = 1024;

// variant bits (0: the first measured launch):
//   1  grids sized to the blocks the GPU holds at once (occupancy x SMs) instead of 8 x SMs,
//      so that a split launch runs in one wave;
//   2  rows of many (>= kWarpRowsMin, unsplit) one warp per row;
//   4  evict-first 16-byte loads for inputs under 256 MB (rows kernels).
// x viewed as (outer, K, inner), contiguous; reduces K. splits = 0: chosen here.
at::Tensor exact_sum(const at::Tensor& x, int64_t outer, int64_t K, int64_t inner, int64_t splits,
                     int64_t variant) {
  const auto st = x.scalar_type();
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() &&
              (st == at::kFloat || st == at::kBFloat16 || st == at::kHalf));
  TORCH_CHECK(x.numel() == outer * K * inner);
  TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0);
  c10::cuda::CUDAGuard guard(x.device());
  auto stream = at::cuda::getCurrentCUDAStream();
  auto out = at::empty({outer * inner}, x.options());
  const int target = sm_count() * 8;  // blocks that fill the GPU (8 blocks of 256 per SM)
  const bool f32 = st == at::kFloat;
  if (f32 && inner == 1 && (K == 2 || K == 8 || K == 32 || K == 128)) {
    const int64_t n4 = outer * K / 4;
    int64_t fill = target;
    if (variant & 1) {
      fill = K == 2   ? resident(short_kernel<2>, kThreads)
             : K == 8 ? resident(short_kernel<8>, kThreads)
             : K == 32 ? resident(short_kernel<32>, kThreads)
                       : resident(short_kernel<128>, kThreads);
    }
    const int blocks = static_cast<int>(std::min<int64_t>(fill, (n4 + kThreads - 1) / kThreads));
    switch (K) {
      case 2: short_kernel<2><<<blocks, kThreads, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), outer); break;
      case 8: short_kernel<8><<<blocks, kThreads, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), outer); break;
      case 32: short_kernel<32><<<blocks, kThreads, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), outer); break;
      default: short_kernel<128><<<blocks, kThreads, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), outer); break;
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
  }
  if (inner == 1) {
    const int64_t vec = 16 / x.element_size();
    TORCH_CHECK(K % vec == 0, "prototype: rows of whole 16-byte vectors");
    const int64_t rows = outer;
    if (splits <= 0) {
      // Enough blocks to fill the GPU, each with at least 4 loads of 16 bytes per thread.
      const int64_t most = std::max<int64_t>(1, K / (4 * vec * kThreads));
      if (variant & 1) {  // at most one wave of the blocks the GPU holds
        const int64_t fill = st == at::kFloat        ? resident(rows_kernel<float>, kThreads)
                             : st == at::kBFloat16 ? resident(rows_kernel<__nv_bfloat16>, kThreads)
                                                   : resident(rows_kernel<__half>, kThreads);
        splits = std::min(std::max<int64_t>(1, fill / rows), most);
      } else {
        splits = std::min((target + rows - 1) / rows, most);
      }
    }
    int64_t chunk = (K + splits - 1) / splits;
    chunk = (chunk + vec - 1) / vec * vec;
    splits = (K + chunk - 1) / chunk;
    auto part = at::empty({rows * splits}, x.options().dtype(at::kDouble));
    auto pflags = at::empty({rows * splits}, x.options().dtype(at::kInt));
    at::Tensor& z = zeroed(rows * (kDigits * 8 + 8), x.device());
    auto* zb = z.data_ptr<uint8_t>();
    const int64_t per_thread = 4 * vec * ((chunk / vec + 4 * kThreads - 1) / (4 * kThreads));
    RowsArgs a{x.data_ptr(), out.data_ptr(), K, chunk, static_cast<int>(splits),
               ceil_log2(per_thread), part.data_ptr<double>(),
               pflags.data_ptr<int>(), reinterpret_cast<unsigned long long*>(zb),
               reinterpret_cast<int*>(zb + rows * kDigits * 8),
               reinterpret_cast<unsigned*>(zb + rows * kDigits * 8 + rows * 4),
               (variant & 4) != 0 && x.numel() * x.element_size() < (int64_t(256) << 20)};
    if ((variant & 2) && splits == 1 && rows >= kWarpRowsMin) {
      a.log2n = ceil_log2(4 * vec * ((K / vec + 4 * 32 - 1) / (4 * 32)));
      const int64_t blocks = (rows + kThreads / 32 - 1) / (kThreads / 32);
      if (st == at::kFloat)
        warp_rows_kernel<float><<<blocks, kThreads, 0, stream>>>(a, rows);
      else if (st == at::kBFloat16)
        warp_rows_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(a, rows);
      else
        warp_rows_kernel<__half><<<blocks, kThreads, 0, stream>>>(a, rows);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return out;
    }
    const dim3 grid(splits, rows);
    if (st == at::kFloat)
      rows_kernel<float><<<grid, kThreads, 0, stream>>>(a);
    else if (st == at::kBFloat16)
      rows_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(a);
    else
      rows_kernel<__half><<<grid, kThreads, 0, stream>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
  }
  TORCH_CHECK(f32, "prototype: columns of float32 only");
  TORCH_CHECK(inner % 4 == 0, "prototype: inner % 4 == 0");
  const int64_t C = outer * inner;
  const int64_t tiles = (C + kColsTile - 1) / kColsTile;
  if (splits <= 0) {
    const int64_t most = std::max<int64_t>(1, K / (4 * kColsY));
    if (variant & 1)  // at most one wave of the blocks the GPU holds
      splits = std::min(std::max<int64_t>(1, resident(cols_kernel, kColsX * kColsY) / tiles), most);
    else
      splits = std::min((target / 2 + tiles - 1) / tiles, most);  // 4 blocks of 256 per SM
  }
  int64_t chunk = (K + splits - 1) / splits;
  splits = (K + chunk - 1) / chunk;
  auto part = at::empty({splits * C}, x.options().dtype(at::kDouble));
  auto pflags = at::empty({splits * C}, x.options().dtype(at::kInt));
  at::Tensor& z = zeroed(C * (kDigits * 8 + 4) + tiles * 4, x.device());
  auto* zb = z.data_ptr<uint8_t>();
  ColsArgs a{x.data_ptr<float>(), out.data_ptr<float>(), K, inner, C, chunk,
             static_cast<int>(splits), ceil_log2(4 * ((chunk + 4 * kColsY - 1) / (4 * kColsY))),
             part.data_ptr<double>(), pflags.data_ptr<int>(),
             reinterpret_cast<unsigned long long*>(zb), reinterpret_cast<int*>(zb + C * kDigits * 8),
             reinterpret_cast<unsigned*>(zb + C * kDigits * 8 + C * 4)};
  cols_kernel<<<dim3(splits, tiles), dim3(kColsX, kColsY), 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace

// Registered with the dispatcher (no Python module), so that one build loads in any Python:
// torch.ops.exact_proto.exact_sum.
TORCH_LIBRARY(exact_proto, m) {
  m.def("exact_sum(Tensor x, int outer, int K, int inner, int splits, int variant=0) -> Tensor");
}
TORCH_LIBRARY_IMPL(exact_proto, CUDA, m) { m.impl("exact_sum", &exact_sum); }
