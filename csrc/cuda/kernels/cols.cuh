// cols.cuh: one thread column per output, for outputs that are contiguous in the input.
//
// What it computes: the same as rows.cuh, for geometries whose innermost kept dim has stride 1 in
// the input and the output (columns of a row-major matrix, the middle dim of (A, B, C), NHWC
// statistics over N, H, W, bias gradients).
//
// Work split: a block is 32 x 8 threads. The 32 threads of a warp take 32 neighbouring outputs,
// so every load of a warp is one coalesced 32-element segment of an input row; the 8 warps of the
// block walk different reduced elements (kUnroll loads in flight each), and meet in a shared-
// memory tree with sequential addressing over the 8 rows. When there are too few output tiles to
// fill the GPU, K is also split over gridDim.y blocks, combined through arrive_last().
//
//   cols_kernel<SumOp<float>, float, float><<<grid, dim3(32, 8), 0, stream>>>(in, out, geom, cfg,
//                                                                            partials, counters);
#pragma once
#include "../../geometry.h"
#include "common.cuh"
#include "rows.cuh"  // kUnroll

namespace treduce {

constexpr int kColsX = 32;
constexpr int kColsY = 8;

struct ColsConfig {
  int64_t inner;      // size of the innermost kept dim
  int64_t col_tiles;  // ceil(inner / kColsX)
  int64_t tiles;      // (M / inner) * col_tiles
  int splits;         // S: blocks per tile along K
  int64_t per_split;  // reduced elements per split
};

// Sequential-addressing tree over the kColsY rows of `smem`; the threads with ty == 0 get the
// result (only they read row 0, so the next call may write it without another barrier).
template <class Op, class acc_t>
__device__ __forceinline__ acc_t column_reduce(acc_t v, acc_t (*smem)[kColsX + 1], int tx,
                                               int ty) {
  smem[ty][tx] = v;
  __syncthreads();
#pragma unroll
  for (int s = kColsY / 2; s > 0; s >>= 1) {
    if (ty < s) smem[ty][tx] = Op::combine(smem[ty][tx], smem[ty + s][tx]);
    __syncthreads();
  }
  return ty == 0 ? smem[0][tx] : v;
}

template <class Op, class in_t, class out_t>
__global__ void __launch_bounds__(kColsX* kColsY)
    cols_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                const ColsConfig cfg, typename Op::acc_t* __restrict__ partials,
                unsigned* __restrict__ counters) {
  using acc_t = typename Op::acc_t;
  __shared__ acc_t smem[kColsY][kColsX + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int split = blockIdx.y;
  const int64_t K = g.reduce_len;

  for (int64_t tile = blockIdx.x; tile < cfg.tiles; tile += gridDim.x) {
    const int64_t outer = tile / cfg.col_tiles;
    const int64_t col = (tile - outer * cfg.col_tiles) * kColsX + tx;
    const bool active = col < cfg.inner;
    const int64_t o = outer * cfg.inner + col;
    acc_t acc = Op::identity();
    if (active) {
      const in_t* __restrict__ p = in + g.kept.in_offset(o);
      const int64_t r0 = split * cfg.per_split;
      const int64_t r1 = r0 + cfg.per_split < K ? r0 + cfg.per_split : K;
      int64_t r = r0 + ty;
      for (; r + (kUnroll - 1) * kColsY < r1; r += kUnroll * kColsY) {
        in_t x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) x[u] = p[g.red.in_offset(r + u * kColsY)];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc = Op::reduce(acc, to_acc<acc_t>(x[u]));
      }
      for (; r < r1; r += kColsY) acc = Op::reduce(acc, to_acc<acc_t>(p[g.red.in_offset(r)]));
    }
    acc = column_reduce<Op>(acc, smem, tx, ty);
    if (cfg.splits == 1) {
      if (active && ty == 0) out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(acc));
      continue;
    }
    acc_t* slot = partials + (tile * kColsX + tx) * cfg.splits;
    if (active && ty == 0) slot[split] = acc;
    if (!arrive_last(&counters[tile], cfg.splits)) continue;
    acc_t v = Op::identity();
    if (active)
      for (int s = ty; s < cfg.splits; s += kColsY) v = Op::combine(v, load_cg(slot + s));
    v = column_reduce<Op>(v, smem, tx, ty);
    if (active && ty == 0) out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(v));
  }
}

}  // namespace treduce
