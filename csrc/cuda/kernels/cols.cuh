// cols.cuh: threads across neighbouring outputs, for outputs that are contiguous in the input.
//
// What it computes: the same as rows.cuh, for geometries whose innermost kept dim has stride 1 in
// the input and the output (columns of a row-major matrix, the middle dim of (A, B, C), NHWC
// statistics over N, H, W, bias gradients).
//
// Work split: a block is 32 x 8 threads. Each thread owns kVec neighbouring outputs and reads them
// with one 16-byte load per reduced element when the geometry is aligned for it (kVec =
// cols_vec(): 16 / sizeof(in_t), fewer for large accumulators), else one element (kVec = 1). The 32
// lanes of a warp are split into CX column lanes (CX = col_lanes, a power of two, sized to the
// inner dim) times 32 / CX reduced-element lanes, so that a narrow inner dim (2, 8, 32 outputs)
// still keeps every lane loading: a warp reads 32 / CX consecutive reduced elements of CX * kVec
// outputs per load. The partial values meet through warp shuffles across the reduced-element lanes,
// then a shared-memory tree with sequential addressing over the 8 warps. When there are too few
// output tiles to fill the GPU, K is also split over gridDim.y blocks, combined through
// arrive_last().
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
  int col_lanes;      // CX: lanes of a warp across outputs (power of two, 1..32)
  int64_t inner;      // size of the innermost kept dim
  int64_t col_tiles;  // ceil(inner / (CX * kVec))
  int64_t tiles;      // (M / inner) * col_tiles
  int splits;         // S: blocks per tile along K
  int64_t per_split;  // reduced elements per split
  StepDigits step;    // (32 / CX) * kColsY, the block's reduced-element stride, as digits
};

// Sequential-addressing tree over the kColsY rows of `smem`, for the tile's CX * kVec columns;
// column c ends in smem[0][c]. Lanes cx < CX of each warp hold the values: after the loads they
// own neighbouring columns cx * kVec + j, after the split fold columns j * CX + cx. The tree walks
// columns j * CX + cx.
template <class Op, int kVec, class acc_t>
__device__ __forceinline__ void column_reduce(const acc_t (&v)[kVec],
                                              acc_t (*smem)[kColsX * kVec + 1], int CX, int tx,
                                              int ty, bool neighbours) {
  __syncthreads();  // earlier readers of smem (the previous tile) are done
  if (tx < CX) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) smem[ty][neighbours ? tx * kVec + j : j * CX + tx] = v[j];
  }
  __syncthreads();
#pragma unroll
  for (int s = kColsY / 2; s > 0; s >>= 1) {
    if (ty < s && tx < CX) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int c = j * CX + tx;
        smem[ty][c] = Op::combine(smem[ty][c], smem[ty + s][c]);
      }
    }
    __syncthreads();
  }
}

// Outputs per thread in the vector variant: one 16-byte load's worth, unless that would give a
// thread over 128 bytes of accumulators (the arg ops on 1-byte inputs: 8-byte loads then).
template <class Op, class in_t>
constexpr int cols_vec() {
  constexpr int v = vec_width<in_t>();
  constexpr int most = 128 / static_cast<int>(sizeof(typename Op::acc_t));
  return v < most ? v : most;
}

// Vector loads in flight per thread: 8 when the thread's accumulators take at most 16 bytes
// (packed 16-bit max/min, four floats, two doubles), else kUnroll = 4; single elements (kVec = 1)
// kUnroll.
template <class Op, class in_t, int kVec>
constexpr int cols_unroll() {
  constexpr bool packed = packed_extreme<Op, in_t>::value && kVec % 2 == 0;
  return kVec > 1 && (packed || sizeof(typename Op::acc_t) * kVec <= 16) ? 8 : kUnroll;
}

// At most 64 registers (4 blocks per SM) unless a thread carries over 32 bytes of accumulators;
// at most 80 (3 blocks) with 8 loads in flight (cols_unroll), which spilled inside the loop at 64.
// Over 32 bytes (the arg ops' value-index pairs, int64 accumulators of 1- and 2-byte inputs): at
// most 128 (2 blocks), where unbounded they took 140-198 and one block per SM (ptxas, sm_90;
// at 128, 0-20 bytes spilled, at 80 up to 100).
template <class Op, class in_t, int kVec>
constexpr int cols_min_blocks() {
  if (cols_unroll<Op, in_t, kVec>() == 8) return 3;
  return sizeof(typename Op::acc_t) * kVec <= 32 ? 4 : 2;
}

// Splits per batch of the final merge: kS * kVec partials (about 64 bytes per thread) in flight.
template <class acc_t, int kVec>
constexpr int cols_merge_batch() {
  constexpr int s = 64 / (kVec * static_cast<int>(sizeof(acc_t)));
  return s > 1 ? s : 1;
}

// A thread's accumulators for its kVec neighbouring columns: one element of each per reduced
// element, in increasing r (fold). Max/min of half or bfloat16 (packed_extreme) keep them as
// kVec / 2 pairs of the input type instead, one packed NaN-propagating instruction per two
// columns (exact: the result is one of the inputs), converted to acc_t once at the end: a
// float accumulator cost 5 instructions per element (three compares, two selects).
template <class Op, class in_t, int kVec, bool = packed_extreme<Op, in_t>::value && kVec % 2 == 0>
struct ColumnFold {
  using acc_t = typename Op::acc_t;
  acc_t acc[kVec];
  __device__ __forceinline__ ColumnFold() {
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[j] = Op::identity();
  }
  __device__ __forceinline__ void add(const Vec<in_t, kVec>& x, int64_t r) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[j] = fold<Op>(acc[j], x.v[j], r);
  }
  __device__ __forceinline__ void result(acc_t (&out)[kVec]) const {
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[j] = acc[j];
  }
};

template <class Op, class in_t, int kVec>
struct ColumnFold<Op, in_t, kVec, true> {
  using acc_t = typename Op::acc_t;
  using P = packed_extreme<Op, in_t>;
  using pair_t = typename P::pair_t;
  pair_t acc[kVec / 2];
  __device__ __forceinline__ ColumnFold() {
    const in_t id = from_acc<in_t>(Op::identity());  // +-inf: exact in every 16-bit type
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) acc[i] = pair_t(id, id);
  }
  __device__ __forceinline__ void add(const Vec<in_t, kVec>& x, int64_t) {
    const pair_t* p = reinterpret_cast<const pair_t*>(x.v);
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i)
      acc[i] = P::max ? __hmax2_nan(acc[i], p[i]) : __hmin2_nan(acc[i], p[i]);
  }
  __device__ __forceinline__ void result(acc_t (&out)[kVec]) const {
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) {
      out[2 * i] = to_acc<acc_t>(acc[i].x);
      out[2 * i + 1] = to_acc<acc_t>(acc[i].y);
    }
  }
};

// The last block of a tile folds the tile's split values ([split][column] in `slots`): thread
// (tx, ty), tx < CX, folds splits ty, ty + kColsY, ... of its kVec columns in order, with
// kS * kVec loads in flight. (cfg by reference: the splits count passed by value moved the
// machine code of 28 instantiations.)
template <class Op, int kVec, class acc_t>
__device__ __forceinline__ void fold_col_splits(acc_t* slots, const ColsConfig& cfg, int tile_cols,
                                                int CX, int tx, int ty, acc_t (&acc)[kVec]) {
  constexpr int kS = cols_merge_batch<acc_t, kVec>();
#pragma unroll
  for (int j = 0; j < kVec; ++j) acc[j] = Op::identity();
  int s = ty;
  for (; s + (kS - 1) * kColsY < cfg.splits; s += kS * kColsY) {
    acc_t x[kS][kVec];
#pragma unroll
    for (int u = 0; u < kS; ++u)
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        x[u][j] = load_cg(slots + int64_t(s + u * kColsY) * tile_cols + j * CX + tx);
#pragma unroll
    for (int u = 0; u < kS; ++u)
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[j] = Op::combine(acc[j], x[u][j]);
  }
  for (; s < cfg.splits; s += kColsY) {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      acc[j] = Op::combine(acc[j], load_cg(slots + int64_t(s) * tile_cols + j * CX + tx));
  }
}

template <class Op, class in_t, class out_t, int kVec>
__global__ void __launch_bounds__(kColsX* kColsY, cols_min_blocks<Op, in_t, kVec>())
    cols_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                const ColsConfig cfg, typename Op::acc_t* __restrict__ partials,
                unsigned* __restrict__ counters) {
  using acc_t = typename Op::acc_t;
  using VecT = Vec<in_t, kVec>;
  __shared__ acc_t smem[kColsY][kColsX * kVec + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int CX = cfg.col_lanes;
  const int cx = tx & (CX - 1);           // which column group of the tile
  const int lanes_r = kColsX / CX;        // reduced-element lanes per warp
  const int rl = ty * lanes_r + tx / CX;  // this thread's reduced-element lane in the block
  const int rows_per_step = kColsY * lanes_r;
  const int tile_cols = CX * kVec;
  const int split = blockIdx.y;
  const int64_t K = g.reduce_len;

  for (int64_t tile = blockIdx.x; tile < cfg.tiles; tile += gridDim.x) {
    const int64_t outer = tile / cfg.col_tiles;
    const int64_t col0 = (tile - outer * cfg.col_tiles) * tile_cols;  // first column of the tile
    const int64_t col = col0 + cx * kVec;                             // this thread's first
    acc_t acc[kVec];
    ColumnFold<Op, in_t, kVec> f;
    if (col < cfg.inner) {  // with kVec > 1 the host guarantees inner % kVec == 0
      const in_t* __restrict__ p = in + g.kept.in_offset(outer * cfg.inner + col);
      const int64_t r0 = split * cfg.per_split;
      const int64_t r1 = r0 + cfg.per_split < K ? r0 + cfg.per_split : K;
      walk_offsets(g.red, r0 + rl, rows_per_step, cfg.step, [&](auto&& next) {
        int64_t r = r0 + rl;
        constexpr int kU = cols_unroll<Op, in_t, kVec>();
        for (; r + (kU - 1) * rows_per_step < r1; r += kU * rows_per_step) {
          VecT x[kU];
          const uint64_t pol = load_policy<VecT>(g.evict_first);
#pragma unroll
          for (int u = 0; u < kU; ++u)
            x[u] = load_in(reinterpret_cast<const VecT*>(p + next()), pol);
#pragma unroll
          for (int u = 0; u < kU; ++u) f.add(x[u], r + u * rows_per_step);
        }
        for (; r < r1; r += rows_per_step)
          f.add(
              load_in(reinterpret_cast<const VecT*>(p + next()), load_policy<VecT>(g.evict_first)),
              r);
      });
    }
    f.result(acc);
    // Fold the warp's reduced-element lanes into lanes cx < CX (lanes of one column group differ
    // by multiples of CX). Every lane takes part in the shuffles.
    for (int offset = kColsX / 2; offset >= CX; offset >>= 1) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[j] = Op::combine(acc[j], shfl_down(acc[j], offset, 32));
    }
    column_reduce<Op, kVec>(acc, smem, CX, tx, ty, /*neighbours=*/true);

    if (cfg.splits > 1) {  // leave this block's values; the tile's last block combines them
      // [split][column]: a split's values are one contiguous row, so that both the stores and
      // the final merge's loads (lanes tx across neighbouring columns) are coalesced.
      acc_t* slots = partials + tile * tile_cols * cfg.splits;
      if (ty == 0 && tx < CX) {
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          slots[int64_t(split) * tile_cols + j * CX + tx] = smem[0][j * CX + tx];
      }
      if (!arrive_last(&counters[tile], cfg.splits)) continue;
      if (tx < CX) fold_col_splits<Op, kVec>(slots, cfg, tile_cols, CX, tx, ty, acc);
      column_reduce<Op, kVec>(acc, smem, CX, tx, ty, /*neighbours=*/false);
    }
    if (ty == 0 && tx < CX) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int64_t c = col0 + j * CX + tx;
        if (c < cfg.inner)
          out[g.kept.out_offset(outer * cfg.inner + c)] =
              from_acc<out_t>(Op::finalize(smem[0][j * CX + tx], K, g.num_outputs));
      }
    }
  }
}

}  // namespace treduce
