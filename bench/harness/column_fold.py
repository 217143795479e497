"""The canonical column fold outside canon_kernel (bench/NOTES.md steps 144-146), with cupy: float4
columns of a (16384, 16384) float32 matrix over dim 0, leaves of 64 rows, a thread folding one
leaf per round with eight 16-byte loads in flight, blocks of 32 output lanes x 8 leaf lanes on
128 x S blocks (plain's grid at S = 3). Each ingredient of canon_kernel's round is a template
switch, so that one call says which of them costs the library its 5% against this loop:
  MODE  the fold: 0 F2F + DADD (canon_kernel's), 1 the scaled widening + DFMA with its inf/NaN
        check (step 144), 2 float FADD (plain's), 3 the scaled widening without the check
  BAR   the round's tree over the 8 leaf lanes: 0 none (each thread keeps its sum), 1 two
        barriers and thread ty = 0 sums the 8 nodes (step 145's tree_over_y), 2 a barrier per
        level (main's tree_over_y: five per round)
  POL   the loads: 0 __ldg, 1 ld.global.nc.L2::cache_hint with an evict_first policy made per
        batch (load_policy / load_in), 2 the same with evict_unchanged
  LVL   1: thread ty = 0 pushes each round's node onto a binary counter in local memory (canon
        kernel's LocalLevels for columns), 0: adds it to a register
  ORD   the rows a thread reads: 0 its own leaf's 64 rows (the canonical order: the block's 8
        warps read 8 leaves 64 rows apart), 1 the round's 512 rows interleaved over the warps
        (row 8 k + ty, plain's cols_kernel pattern: not the canonical order, timing only)
Also checks that the scaled widening's bits equal F2F + DADD's (wide exponents, zeros, negative
zeros, subnormals). Usage: python3 bench/harness/column_fold.py OUT.json (on the H200). Its
torch.sum line is not comparable with triton's timings (cupy's events around a torch call read
5% high), so the library's calls are timed elsewhere (scratch A/B scripts, bench/bench.py)."""
import json
import statistics as st
import sys

import cupy as cp
import numpy as np
import torch

SRC = r'''
__device__ __forceinline__ double widen_scaled(float x) {
  const unsigned u = __float_as_uint(x);
  const unsigned hi = static_cast<unsigned>(static_cast<int>(u) >> 3) & 0x8fffffffu;
  return __hiloint2double((int)hi, (int)(u << 29));  // x * 2^-896, exactly, for finite x
}
template <int MODE>
__device__ __forceinline__ void fold1(double& a, float& fa, float& chk, float x) {
  if (MODE == 0) a = __dadd_rn(a, (double)x);
  else if (MODE == 1) { a = __fma_rn(widen_scaled(x), 0x1p896, a); chk = __fmaf_rn(x, 0.0f, chk); }
  else if (MODE == 3) a = __fma_rn(widen_scaled(x), 0x1p896, a);
  else fa = __fadd_rn(fa, x);
}
template <int POL>
__device__ __forceinline__ unsigned long long policy() {
  unsigned long long p = 0;
  if (POL == 1) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  if (POL == 2) asm volatile("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(p));
  return p;
}
template <int POL>
__device__ __forceinline__ float4 load(const float4* p, unsigned long long pol) {
  if (POL == 0) return __ldg(p);
  float4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(pol));
  return v;
}
template <int MODE, int BAR, int POL, int LVL, int ORD>
__global__ void __launch_bounds__(256, 3) colfold(const float4* __restrict__ in,
    double* __restrict__ out, int cols4, int leaves, int leaves_per_split) {
  __shared__ double sm[256 * 4];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int c = blockIdx.x * 32 + tx;
  const int q0 = blockIdx.y * leaves_per_split;
  int q1 = q0 + leaves_per_split; if (q1 > leaves) q1 = leaves;
  double a[4] = {0, 0, 0, 0};
  double lv[4][12];
  float chk = 0.f;
  int round = 0;
  for (int qb = q0; qb < q1; qb += 8, ++round) {
    const int q = qb + ty;
    double b[4] = {0, 0, 0, 0};
    float fb[4] = {0, 0, 0, 0};
    if (ORD == 0 ? q < q1 : qb + 8 <= q1) {
      const float4* p = ORD == 0 ? in + (size_t)q * 64 * cols4 + c
                                 : in + ((size_t)qb * 64 + ty) * cols4 + c;
      const size_t rs = ORD == 0 ? (size_t)cols4 : (size_t)cols4 * 8;  // a thread's row step
      #pragma unroll 1
      for (int bt = 0; bt < 8; ++bt) {
        float4 x[8];
        const unsigned long long pol = policy<POL>();
        #pragma unroll
        for (int u = 0; u < 8; ++u) x[u] = load<POL>(p + (size_t)(bt * 8 + u) * rs, pol);
        #pragma unroll
        for (int u = 0; u < 8; ++u) {
          fold1<MODE>(b[0], fb[0], chk, x[u].x); fold1<MODE>(b[1], fb[1], chk, x[u].y);
          fold1<MODE>(b[2], fb[2], chk, x[u].z); fold1<MODE>(b[3], fb[3], chk, x[u].w);
        }
      }
    }
    if (MODE == 2) { for (int v = 0; v < 4; ++v) b[v] = fb[v]; }
    if (BAR == 1) {
      __syncthreads();
      for (int v = 0; v < 4; ++v) sm[v * 256 + threadIdx.x] = b[v];
      __syncthreads();
      if (ty == 0) for (int v = 0; v < 4; ++v) { double s = 0; for (int y = 0; y < 8; ++y) s += sm[v * 256 + y * 32 + tx]; b[v] = s; }
    } else if (BAR == 2) {
      __syncthreads();
      for (int v = 0; v < 4; ++v) sm[threadIdx.x * 4 + v] = b[v];
      __syncthreads();
      for (int s = 1; s < 8; s <<= 1) {
        if ((ty & (2 * s - 1)) == 0)
          for (int v = 0; v < 4; ++v) sm[threadIdx.x * 4 + v] += sm[(threadIdx.x + s * 32) * 4 + v];
        __syncthreads();
      }
      if (ty == 0) for (int v = 0; v < 4; ++v) b[v] = sm[threadIdx.x * 4 + v];
    }
    if (LVL && (BAR == 0 || ty == 0)) {  // push onto the counter (merges equal heights)
      for (int v = 0; v < 4; ++v) {
        double node = b[v];
        int h = 0;
        for (int k = round; k & 1; k >>= 1, ++h) node = lv[v][h] + node;
        lv[v][h] = node;
        if (h == 0 && round == 0) a[v] = 0;
        a[v] = lv[v][h];  // keep the work alive
      }
    } else {
      for (int v = 0; v < 4; ++v) a[v] += b[v];
    }
  }
  if (MODE == 1 && chk != chk) a[0] = __longlong_as_double(0x7ff8000000000000ll);
  double* o = out + ((size_t)blockIdx.y * gridDim.x * 256 + blockIdx.x * 256 + threadIdx.x) * 4;
  for (int v = 0; v < 4; ++v) o[v] = a[v];
}
template <int MODE>
__global__ void leafsum(const float4* __restrict__ in, double* __restrict__ out, int cols4, int leaves) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols4) return;
  for (int q = 0; q < leaves; ++q) {
    double b[4] = {0, 0, 0, 0}; float fb[4]; float chk = 0.f;
    for (int r = 0; r < 64; ++r) {
      const float4 x = in[(size_t)(q * 64 + r) * cols4 + c];
      fold1<MODE>(b[0], fb[0], chk, x.x); fold1<MODE>(b[1], fb[1], chk, x.y);
      fold1<MODE>(b[2], fb[2], chk, x.z); fold1<MODE>(b[3], fb[3], chk, x.w);
    }
    for (int v = 0; v < 4; ++v) out[((size_t)q * cols4 + c) * 4 + v] = b[v];
  }
}
'''
VARIANTS = ["0,1,0,0,0", "0,2,0,0,0", "0,1,1,0,0", "0,1,2,0,0", "0,1,0,1,0", "0,2,1,1,0",
            "0,0,0,0,0", "1,1,0,0,0", "3,1,0,0,0", "2,1,0,0,0", "2,2,1,1,0", "2,0,0,0,0",
            "0,1,0,0,1", "0,2,1,1,1", "2,0,0,0,1"]


def main(out_path):
    names = [f"colfold<{v}>" for v in VARIANTS] + ["leafsum<0>", "leafsum<3>"]
    mod = cp.RawModule(code=SRC, options=("-std=c++17", "--gpu-architecture=sm_90"),
                       name_expressions=names)
    res = {}
    n_r, n_c = 64 * 64, 4096
    g = torch.Generator(device="cuda").manual_seed(7)
    e = torch.randint(-149, 127, (n_r, n_c), device="cuda", generator=g).float()
    s = torch.where(torch.rand((n_r, n_c), device="cuda", generator=g) < 0.5, -1.0, 1.0)
    m = 1 + torch.rand((n_r, n_c), device="cuda", generator=g)
    x = (s * m * torch.exp2(e)).float()
    for step, v in ((97, 0.0), (89, -0.0), (83, 1e-45), (79, -3e-39)):
        x.view(-1)[::step] = v
    xc = cp.asarray(x)
    o0 = cp.empty((64, n_c // 4, 4), dtype=cp.float64)
    o3 = cp.empty_like(o0)
    for nm, o in (("leafsum<0>", o0), ("leafsum<3>", o3)):
        mod.get_function(nm)(((n_c // 4 + 127) // 128,), (128,),
                             (xc, o, np.int32(n_c // 4), np.int32(64)))
    cp.cuda.Device().synchronize()
    res["scaled_bits_equal"] = bool((o0.view(cp.int64) == o3.view(cp.int64)).all())
    print("scaled widening's bits equal F2F + DADD's:", res["scaled_bits_equal"])

    R = C = 16384
    x = torch.randn((R, C), device="cuda")
    xc = cp.asarray(x)
    cols4, leaves = C // 4, R // 64
    tiles = cols4 // 32
    out = cp.empty((8, tiles, 256, 4), dtype=cp.float64)
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def bench(fn, n=30):
        fn(); fn()
        ts = []
        for _ in range(n):
            start.record(); fn(); end.record(); end.synchronize()
            ts.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
        return st.median(ts)

    rows = {}
    for _ in range(3):
        for v in VARIANTS:
            f = mod.get_function(f"colfold<{v}>")
            for splits in (3, 6):
                lps = ((leaves + splits - 1) // splits + 7) // 8 * 8
                sp = (leaves + lps - 1) // lps
                t = bench(lambda: f((tiles, sp), (256,), (xc, out, np.int32(cols4),
                                                           np.int32(leaves), np.int32(lps))))
                rows.setdefault(f"MODE,BAR,POL,LVL,ORD={v} splits={sp}", []).append(t)
        rows.setdefault("torch.sum d0", []).append(bench(lambda: torch.sum(x, 0)))
    res["us"] = rows
    for k, v in rows.items():
        print(f"{k:34s} " + " ".join(f"{t:7.1f}" for t in v) + f"   median {st.median(v):7.1f}")
    json.dump(res, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
