// cols.cuh: one thread column per output group, for outputs that are contiguous in the input.
//
// What it computes: the same as rows.cuh, for geometries whose innermost kept dim has stride 1 in
// the input and the output (columns of a row-major matrix, the middle dim of (A, B, C), NHWC
// statistics over N, H, W, bias gradients).
//
// Work split: a block is 32 x 8 threads. Each thread owns kVec neighbouring outputs and reads them
// with one 16-byte load per reduced element when the geometry is aligned for it (kVec = 16 /
// sizeof(in_t)), else one element (kVec = 1); a warp thus reads 32 * kVec contiguous elements of
// one input row per load. The 8 warps of the block walk different reduced elements, kUnroll loads
// in flight each, and meet in a shared-memory tree with sequential addressing over the 8 rows.
// When there are too few output tiles to fill the GPU, K is also split over gridDim.y blocks,
// combined through arrive_last().
//
//   cols_kernel<SumOp<float>, float, float, 4><<<grid, dim3(32, 8), 0, stream>>>(in, out, geom,
//                                                                     cfg, partials, counters);
#pragma once
#include "../../geometry.h"
#include "common.cuh"
#include "rows.cuh"  // kUnroll

namespace treduce {

constexpr int kColsX = 32;
constexpr int kColsY = 8;

struct ColsConfig {
  int64_t inner;      // size of the innermost kept dim
  int64_t col_tiles;  // ceil(inner / (kColsX * kVec))
  int64_t tiles;      // (M / inner) * col_tiles
  int splits;         // S: blocks per tile along K
  int64_t per_split;  // reduced elements per split
};

// Sequential-addressing tree over the kColsY rows of `smem` for the tile's kColsX * kVec columns;
// column c ends in smem[0][c]. A thread's kVec values are its columns tx * kVec + j when it owns
// neighbouring columns (after the loads), else columns j * kColsX + tx (after the split fold); the
// tree itself walks columns j * kColsX + tx, which is free of bank conflicts.
template <class Op, int kVec, class acc_t>
__device__ __forceinline__ void column_reduce(const acc_t (&v)[kVec],
                                              acc_t (*smem)[kColsX * kVec + 1], int tx, int ty,
                                              bool neighbours) {
  __syncthreads();  // earlier readers of smem (the previous tile) are done
#pragma unroll
  for (int j = 0; j < kVec; ++j) smem[ty][neighbours ? tx * kVec + j : j * kColsX + tx] = v[j];
  __syncthreads();
#pragma unroll
  for (int s = kColsY / 2; s > 0; s >>= 1) {
    if (ty < s) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int c = j * kColsX + tx;
        smem[ty][c] = Op::combine(smem[ty][c], smem[ty + s][c]);
      }
    }
    __syncthreads();
  }
}

template <class Op, class in_t, class out_t, int kVec>
__global__ void __launch_bounds__(kColsX* kColsY)
    cols_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                const ColsConfig cfg, typename Op::acc_t* __restrict__ partials,
                unsigned* __restrict__ counters) {
  using acc_t = typename Op::acc_t;
  using VecT = Vec<in_t, kVec>;
  constexpr int kTileCols = kColsX * kVec;
  __shared__ acc_t smem[kColsY][kTileCols + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int split = blockIdx.y;
  const int64_t K = g.reduce_len;

  for (int64_t tile = blockIdx.x; tile < cfg.tiles; tile += gridDim.x) {
    const int64_t outer = tile / cfg.col_tiles;
    const int64_t col0 = (tile - outer * cfg.col_tiles) * kTileCols;  // first column of the tile
    const int64_t col = col0 + tx * kVec;                               // this thread's first
    acc_t acc[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[j] = Op::identity();
    if (col < cfg.inner) {  // with kVec > 1 the host guarantees inner % kVec == 0
      const in_t* __restrict__ p = in + g.kept.in_offset(outer * cfg.inner + col);
      const int64_t r0 = split * cfg.per_split;
      const int64_t r1 = r0 + cfg.per_split < K ? r0 + cfg.per_split : K;
      int64_t r = r0 + ty;
      for (; r + (kUnroll - 1) * kColsY < r1; r += kUnroll * kColsY) {
        VecT x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          x[u] = *reinterpret_cast<const VecT*>(p + g.red.in_offset(r + u * kColsY));
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int j = 0; j < kVec; ++j) acc[j] = Op::reduce(acc[j], to_acc<acc_t>(x[u].v[j]));
      }
      for (; r < r1; r += kColsY) {
        const VecT x = *reinterpret_cast<const VecT*>(p + g.red.in_offset(r));
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[j] = Op::reduce(acc[j], to_acc<acc_t>(x.v[j]));
      }
    }
    column_reduce<Op, kVec>(acc, smem, tx, ty, /*neighbours=*/true);

    if (cfg.splits > 1) {  // leave this block's values; the tile's last block combines them
      acc_t* slots = partials + tile * kTileCols * cfg.splits;  // [column][split]
      if (ty == 0) {
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          slots[(j * kColsX + tx) * cfg.splits + split] = smem[0][j * kColsX + tx];
      }
      if (!arrive_last(&counters[tile], cfg.splits)) continue;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {  // thread (tx, ty) folds splits ty, ty + 8, ...
        const acc_t* slot = slots + (j * kColsX + tx) * cfg.splits;
        acc_t v = Op::identity();
        for (int s = ty; s < cfg.splits; s += kColsY) v = Op::combine(v, load_cg(slot + s));
        acc[j] = v;
      }
      column_reduce<Op, kVec>(acc, smem, tx, ty, /*neighbours=*/false);
    }
    if (ty == 0) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int64_t c = col0 + j * kColsX + tx;
        if (c < cfg.inner)
          out[g.kept.out_offset(outer * cfg.inner + c)] =
              from_acc<out_t>(Op::finalize(smem[0][j * kColsX + tx]));
      }
    }
  }
}

}  // namespace treduce
