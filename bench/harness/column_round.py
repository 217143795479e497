"""The canonical column round outside canon_kernel (bench/NOTES.md step 149): columns (16384, 16384)
float32 over dim 0, X output lanes of float4, Y = 256 / X leaf lanes, each thread folding one leaf
of 64 rows per round (F2F + DADD, eight evict-first 16-byte loads in flight), the round's tree over
the leaf lanes with a barrier per level, and the round's node stored by thread ty = 0, as
canon_kernel's one-round splits. Switches (template arguments ASG,STORE,MINB,XL,LD,ARR):
  ASG    0: a block's rounds contiguous, 1: taken in turn (rounds y, y + B, ...: canon_kernel's)
  STORE  1: each round's node stored (a split node), 0: summed in a register
  MINB   blocks per SM the kernel is built for (__launch_bounds__)
  XL     output lanes (16 or 32)
  LD     0: ld.global.nc.L2::cache_hint, 1: the same with L1::no_allocate
  ARR    1: each block arrives on its tile's counter and the last merges the tile's nodes (the
         tree's order is not kept: timing only), 0: no arrival or merge
colclu<CLU> (step 163): the X16 plan as 256 clusters of the tile's 3 blocks (__cluster_dims__),
each round's node stored into the shared memory of the cluster's first block, which merges them:
  CLU    1: st.shared::cluster and the cluster barrier (release / acquire), 2: st.async counted
         on the first block's mbarrier
Timed in CUDA graphs of 10 launches, eight alternating passes, against torch.sum, the library and
its plain kernel. Usage: python3 bench/harness/column_round.py OUT.json (on the H200, the library
built)."""
import json, sys
import cupy as cp
import numpy as np
import torch
import torch_reduce  # noqa: F401
from graph_timing import on_torch_stream, passes, with_env

ops = torch.ops.treduce
SRC = r'''
// The block's tree over its 256 / XL leaf lanes (a barrier per level), for the four columns of
// each output lane: the node ends in sm[tx * 4 + v], read by thread ty = 0.
template <int XL>
__device__ __forceinline__ void tree_over_y(double* sm, const double (&b)[4]) {
  const int ty = threadIdx.x / XL;
  __syncthreads();
  for (int v = 0; v < 4; ++v) sm[threadIdx.x * 4 + v] = b[v];
  __syncthreads();
  for (int s = 1; s < 256 / XL; s <<= 1) {
    if ((ty & (2 * s - 1)) == 0)
      for (int v = 0; v < 4; ++v) sm[threadIdx.x * 4 + v] += sm[(threadIdx.x + s * XL) * 4 + v];
    __syncthreads();
  }
}
// One thread's leaf of 64 rows of four columns at p (rows cols4 float4 apart), folded in order
// into b (F2F + DADD), eight 16-byte evict-first loads in flight (LD 1: with L1::no_allocate).
template <int LD>
__device__ __forceinline__ void fold_leaf64(const float4* p, int cols4, double (&b)[4]) {
#pragma unroll 1
  for (int bt = 0; bt < 8; ++bt) {
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    float4 x[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const float4* pp = p + (size_t)(bt * 8 + u) * cols4;
      if (LD == 0)
        asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=f"(x[u].x), "=f"(x[u].y), "=f"(x[u].z), "=f"(x[u].w) : "l"(pp), "l"(pol));
      else
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=f"(x[u].x), "=f"(x[u].y), "=f"(x[u].z), "=f"(x[u].w) : "l"(pp), "l"(pol));
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      b[0] = __dadd_rn(b[0], (double)x[u].x); b[1] = __dadd_rn(b[1], (double)x[u].y);
      b[2] = __dadd_rn(b[2], (double)x[u].z); b[3] = __dadd_rn(b[3], (double)x[u].w);
    }
  }
}
template <int ASG, int STORE, int MINB, int XL, int LD, int ARR>
__global__ void __launch_bounds__(256, MINB) colfold2(const float4* __restrict__ in,
    double* __restrict__ out, int cols4, int rounds, unsigned* __restrict__ cnt, double* __restrict__ fin) {
  __shared__ int last;
  constexpr int Y = 256 / XL;
  __shared__ double sm[256 * 4];
  const int tx = threadIdx.x % XL, ty = threadIdx.x / XL;
  const int c = blockIdx.x * XL + tx;
  int r0, r1, rs;
  if (ASG == 0) { const int per = (rounds + gridDim.y - 1) / gridDim.y; r0 = blockIdx.y * per;
                  r1 = min(rounds, r0 + per); rs = 1; }
  else { r0 = blockIdx.y; r1 = rounds; rs = gridDim.y; }
  double a[4] = {0, 0, 0, 0};
  for (int r = r0; r < r1; r += rs) {
    const int q = r * Y + ty;
    const float4* p = in + (size_t)q * 64 * cols4 + c;
    double b[4] = {0, 0, 0, 0};
    fold_leaf64<LD>(p, cols4, b);
    tree_over_y<XL>(sm, b);
    if (ty == 0) {
      for (int v = 0; v < 4; ++v) b[v] = sm[threadIdx.x * 4 + v];
      if (STORE) { for (int v = 0; v < 4; ++v) out[((size_t)r * gridDim.x * XL + c) * 4 + v] = b[v]; }
      else { for (int v = 0; v < 4; ++v) a[v] += b[v]; }
    }
  }
  if (!STORE && ty == 0) for (int v = 0; v < 4; ++v) out[((size_t)blockIdx.y * gridDim.x * XL + c) * 4 + v] = a[v];
  if (ARR) {  // arrival; the tile's last block merges its rounds' nodes (a tree over ty)
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) { const unsigned o = atomicAdd(&cnt[blockIdx.x], 1u); last = o == gridDim.y - 1; if (last) cnt[blockIdx.x] = 0; }
    __syncthreads();
    if (!last) return;
    __threadfence();
    double b[4] = {0, 0, 0, 0};
    for (int r = ty; r < rounds; r += Y)
      for (int v = 0; v < 4; ++v) b[v] += __ldcg(out + ((size_t)r * gridDim.x * XL + c) * 4 + v);
    tree_over_y<XL>(sm, b);
    if (ty == 0) for (int v = 0; v < 4; ++v) fin[c * 4 + v] = (float)sm[threadIdx.x * 4 + v];
  }
}
// Cluster merge (CLU 1: remote st.shared::cluster stores + cluster barrier release/acquire;
// CLU 2: st.async into rank 0 counted on its mbarrier). Plan X16, 256 x 3, rounds in turn.
template <int CLU>
__global__ void __cluster_dims__(1, 3, 1) __launch_bounds__(256, 3) colclu(const float4* __restrict__ in,
    int cols4, int rounds, double* __restrict__ fin) {
  constexpr int XL = 16, Y = 16;
  __shared__ double sm[256 * 4];
  __shared__ __align__(16) double nodes[16 * 64];
  __shared__ __align__(8) unsigned long long bar;
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const unsigned bar_s = (unsigned)__cvta_generic_to_shared(&bar);
  if (CLU == 2 && threadIdx.x == 0 && rank == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar_s), "r"(1) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  const int tx = threadIdx.x % XL, ty = threadIdx.x / XL;
  const int c = blockIdx.x * XL + tx;
  int own = 0;
  for (int r = blockIdx.y; r < rounds; r += gridDim.y, ++own) {
    const int q = r * Y + ty;
    const float4* p = in + (size_t)q * 64 * cols4 + c;
    double b[4] = {0, 0, 0, 0};
    fold_leaf64<0>(p, cols4, b);
    tree_over_y<XL>(sm, b);
    if (own == 0) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (ty == 0) {
      for (int v = 0; v < 4; ++v) b[v] = sm[threadIdx.x * 4 + v];
      double* dst = &nodes[r * 64 + tx * 4];
      if (rank == 0) {
        for (int v = 0; v < 4; ++v) dst[v] = b[v];
      } else {
        unsigned d, rb;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"((unsigned)__cvta_generic_to_shared(dst)), "r"(0));
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(bar_s), "r"(0));
        for (int v = 0; v < 4; ++v) {
          if (CLU == 1)
            asm volatile("st.shared::cluster.f64 [%0], %1;" ::"r"(d + 8 * v), "d"(b[v]) : "memory");
          else
            asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];"
                         ::"r"(d + 8 * v), "l"(__double_as_longlong(b[v])), "r"(rb) : "memory");
        }
      }
    }
  }
  if (CLU == 1) {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    if (rank != 0) return;
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  } else {
    if (rank != 0) return;
    if (threadIdx.x == 0)
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_s), "r"((unsigned)((rounds - own) * 64 * 8)) : "memory");
    unsigned done = 0;
    do {
      asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                   : "=r"(done) : "r"(bar_s), "r"(0) : "memory");
    } while (!done);
    __syncthreads();
  }
  double b[4] = {0, 0, 0, 0};
  for (int r = ty; r < rounds; r += Y)
    for (int v = 0; v < 4; ++v) b[v] += nodes[r * 64 + tx * 4 + v];
  tree_over_y<XL>(sm, b);
  if (ty == 0) for (int v = 0; v < 4; ++v) fin[c * 4 + v] = (float)sm[threadIdx.x * 4 + v];
}
'''
# name: (template arguments ASG,STORE,MINB,XL,LD,ARR, blocks per tile)
CV = {"C X16 turn store (256x3)": ("1,1,3,16,0,0", 3), "C X16 turn store arr (256x3)": ("1,1,3,16,0,1", 3),
      "C X16 cont store (256x3)": ("0,1,3,16,0,0", 3), "C X16 nostore (256x1)": ("0,0,3,16,0,0", 1),
      "C X32 turn store (128x3)": ("1,1,3,32,0,0", 3), "C X32 turn store arr (128x3)": ("1,1,3,32,0,1", 3),
      "C X32 cont store (128x3)": ("0,1,3,32,0,0", 3), "C X32 cont nostore (128x3)": ("0,0,3,32,0,0", 3),
      "C X16 turn store arr noalloc": ("1,1,3,16,1,1", 3)}
names = sorted({f"colfold2<{v[0]}>" for v in CV.values()}) + ["colclu<1>", "colclu<2>"]
mod = cp.RawModule(code=SRC, options=("-std=c++17", "--gpu-architecture=sm_90"), name_expressions=names)


res = {}
R = C = 16384
x = torch.randn((R, C), device="cuda")
xc = cp.asarray(x)
cols4 = C // 4
hout = cp.empty((64 * 4096 * 4,), dtype=cp.float64)
cnt = cp.zeros(4096, dtype=cp.uint32)  # the tiles' arrival counters (ARR), reset by the last
fin = cp.empty(16384 * 4, dtype=cp.float64)
e1 = {"torch": lambda: torch.sum(x, 0), "ours": lambda: ops.sum(x, [0]),
      "plain": with_env(lambda: ops.sum(x, [0]), "plain")}
for k, (v, gy) in CV.items():
    f = mod.get_function(f"colfold2<{v}>")
    XL = int(v.split(",")[3])
    rounds = (R // 64) // (256 // XL)
    e1[k] = on_torch_stream(lambda f=f, XL=XL, gy=gy, rounds=rounds: f((cols4 // XL, gy), (256,), (xc, hout, np.int32(cols4), np.int32(rounds), cnt, fin)))
for m in (1, 2):  # the cluster merges, checked against float64 before they are timed
    f = mod.get_function(f"colclu<{m}>")
    e1[f"C X16 turn clu{m} (256x3)"] = on_torch_stream(
        lambda f=f: f((cols4 // 16, 3), (256,), (xc, np.int32(cols4), np.int32(R // 64 // 16), fin)))
    fin.fill(float("nan"))
    e1[f"C X16 turn clu{m} (256x3)"]()
    torch.cuda.synchronize()
    err = (torch.as_tensor(cp.asnumpy(fin))[:C] - x.double().sum(0).cpu()).abs().max().item()
    print(f"clu{m}: max abs error against float64 {err:.2e}", flush=True)
    assert err < 1e-3, err
print("E1 columns f32 (16384,16384) d0, graph of 10, µs per launch", flush=True)
res["E1"] = passes(e1)

json.dump(res, open(sys.argv[1], "w"), indent=1)
