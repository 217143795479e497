// launch.cuh: from a Geometry to a kernel launch. Raw CUDA, nothing from torch.
//
//   Launch lc = plan_launch<Op, in_t>(geom, sm_count);   // strategy, grid, scratch sizes
//   ... the caller provides lc.partials acc_t slots and lc.counters zeroed counters ...
//   run_launch<Op, in_t, out_t>(lc, geom, in, out, partials, counters, stream);
//
// The grid is sized to fill every SM: when the outputs alone give fewer than kBlocksPerSm blocks
// per SM, K is split across blocks as well (gridDim.y), and those blocks combine in-kernel.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "../../geometry.h"
#include "cols.cuh"
#include "rows.cuh"

namespace treduce {

constexpr int64_t kBlocksPerSm = 8;    // 256-thread blocks resident per SM
constexpr int64_t kGridCapPerSm = 32;  // grid-stride beyond this many blocks per SM
constexpr int64_t kCounterCapacity = 4096;  // counters the caller must provide at most
constexpr int64_t kMaxSplits = 65535;       // gridDim.y limit

struct Launch {
  Strategy strategy = Strategy::kRows;
  RowsConfig rows{};
  ColsConfig cols{};
  dim3 grid, block;
  int64_t partials = 0;  // acc_t scratch slots (0 when nothing is split)
  int64_t counters = 0;  // zeroed counters (0 when nothing is split)
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int next_pow2(int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p <<= 1;
  return p;
}

// How many blocks to split K over: enough to fill the GPU, but each block keeps at least
// `min_units` units of work per split.
inline int choose_splits(int64_t tiles, int64_t units, int64_t min_units, int64_t target) {
  if (tiles >= target) return 1;
  const int64_t want = ceil_div(target, tiles);
  const int64_t most = std::max<int64_t>(1, units / min_units);
  return static_cast<int>(std::min({want, most, kMaxSplits}));
}

template <class Op, class in_t>
Launch plan_launch(const Geometry& g, int sm_count) {
  Launch lc;
  lc.strategy = choose_strategy(g);
  const int64_t target = sm_count * kBlocksPerSm;
  const int64_t cap = sm_count * kGridCapPerSm;
  const int64_t M = g.num_outputs, K = g.reduce_len;
  int splits = 1;
  int64_t tiles = 0;

  if (lc.strategy == Strategy::kColumns) {
    ColsConfig& c = lc.cols;
    c.inner = g.kept.sizes[g.kept.ndim - 1];
    c.col_tiles = ceil_div(c.inner, kColsX);
    c.tiles = tiles = (M / c.inner) * c.col_tiles;
    c.splits = splits = choose_splits(tiles, K, kColsY * kUnroll * 2, target);
    c.per_split = ceil_div(K, splits);
    lc.block = dim3(kColsX, kColsY);
    lc.partials = splits > 1 ? tiles * kColsX * splits : 0;
  } else {
    RowsConfig& r = lc.rows;
    const int V = lc.strategy == Strategy::kRows ? vec_width<in_t>() : 1;
    const int64_t units = ceil_div(K, V);  // loads per row
    r.group = std::min(kRowsBlock, next_pow2(ceil_div(units, kUnroll)));
    r.tiles = tiles = ceil_div(M, kRowsBlock / r.group);
    r.splits = splits = choose_splits(tiles, units, int64_t(r.group) * kUnroll * 2, target);
    r.per_split = ceil_div(units, splits);
    lc.block = dim3(kRowsBlock);
    lc.partials = splits > 1 ? tiles * (kRowsBlock / r.group) * splits : 0;
  }
  // A split tile is handled by exactly one block along x, so it owns one counter.
  lc.grid = dim3(static_cast<unsigned>(splits > 1 ? tiles : std::min(tiles, cap)),
                 static_cast<unsigned>(splits));
  lc.counters = splits > 1 ? tiles : 0;
  return lc;
}

template <class Op, class in_t, class out_t>
void run_launch(const Launch& lc, const Geometry& g, const in_t* in, out_t* out,
                typename Op::acc_t* partials, unsigned* counters, cudaStream_t stream) {
  switch (lc.strategy) {
    case Strategy::kRows:
      rows_kernel<Op, in_t, out_t, true>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.rows, partials, counters);
      break;
    case Strategy::kStrided:
      rows_kernel<Op, in_t, out_t, false>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.rows, partials, counters);
      break;
    case Strategy::kColumns:
      cols_kernel<Op, in_t, out_t>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cols, partials, counters);
      break;
  }
}

}  // namespace treduce
