// launch.cuh: from a Geometry to a kernel launch. Raw CUDA, nothing from torch.
//
//   Launch lc = plan_launch<Op, in_t, out_t>(geom, in, sm_count);  // strategy, grid, scratch
//   ... the caller provides lc.partials acc_t slots and lc.counters zeroed counters ...
//   run_launch<Op, in_t, out_t>(lc, geom, in, out, partials, counters, stream);
//
// The grid is sized to fill every SM exactly: the kernel's own occupancy (registers, shared
// memory) gives the resident blocks per SM; when the outputs alone give fewer blocks than that,
// K is split across blocks as well (gridDim.y), and those blocks combine in-kernel. A grid larger
// than one wave but not a whole number of waves would leave SMs idle in the last wave.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "../../geometry.h"
#include "cols.cuh"
#include "rows.cuh"

namespace treduce {

constexpr int64_t kGridCapWaves = 4;        // grid-stride beyond this many waves of blocks
constexpr int64_t kCounterCapacity = 4096;  // counters the caller must provide at most
constexpr int64_t kMaxSplits = 65535;       // gridDim.y limit

struct Launch {
  Strategy strategy = Strategy::kRows;
  bool vec_cols = false;  // columns with 16-byte loads across neighbouring outputs
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

// Resident blocks per SM of `kernel` at `threads` threads (at least 1).
template <class Kernel>
int occupancy(Kernel kernel, int threads) {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();  // leave no sticky error behind; the launch check reports real ones
    n = 1;
  }
  return n > 0 ? n : 1;
}

// Occupancy of the kernel that run_launch() will start for `s`, computed once per kernel.
template <class Op, class in_t, class out_t>
int blocks_per_sm(Strategy s, bool vec_cols) {
  if (s == Strategy::kColumns && vec_cols) {
    static const int n = occupancy(cols_kernel<Op, in_t, out_t, vec_width<in_t>()>, kColsX * kColsY);
    return n;
  }
  switch (s) {
    case Strategy::kRows: {
      static const int n = occupancy(rows_kernel<Op, in_t, out_t, true>, kRowsBlock);
      return n;
    }
    case Strategy::kStrided: {
      static const int n = occupancy(rows_kernel<Op, in_t, out_t, false>, kRowsBlock);
      return n;
    }
    default: {
      static const int n = occupancy(cols_kernel<Op, in_t, out_t, 1>, kColsX * kColsY);
      return n;
    }
  }
}

// Whether every column group of kVec outputs starts on a 16-byte boundary for every reduced
// element: aligned base, inner size a multiple of kVec, and every other stride a multiple of it.
template <class in_t>
bool columns_vectorizable(const Geometry& g, const void* in) {
  constexpr int V = vec_width<in_t>();
  if (reinterpret_cast<uintptr_t>(in) % 16 != 0) return false;
  if (g.kept.sizes[g.kept.ndim - 1] % V != 0) return false;
  for (int d = 0; d + 1 < g.kept.ndim; ++d)
    if (g.kept.in_strides[d] % V != 0) return false;
  for (int d = 0; d < g.red.ndim; ++d)
    if (g.red.in_strides[d] % V != 0) return false;
  return true;
}

template <class Op, class in_t, class out_t>
Launch plan_launch(const Geometry& g, const in_t* in, int sm_count) {
  Launch lc;
  lc.strategy = choose_strategy(g);
  lc.vec_cols = lc.strategy == Strategy::kColumns && columns_vectorizable<in_t>(g, in);
  const int64_t target =
      int64_t(sm_count) * blocks_per_sm<Op, in_t, out_t>(lc.strategy, lc.vec_cols);
  const int64_t cap = target * kGridCapWaves;
  const int64_t M = g.num_outputs, K = g.reduce_len;
  int splits = 1;
  int64_t tiles = 0;

  if (lc.strategy == Strategy::kColumns) {
    ColsConfig& c = lc.cols;
    const int V = lc.vec_cols ? vec_width<in_t>() : 1;
    c.inner = g.kept.sizes[g.kept.ndim - 1];
    c.col_lanes = std::min(kColsX, next_pow2(ceil_div(c.inner, V)));
    const int64_t tile_cols = int64_t(c.col_lanes) * V;
    const int64_t rows_per_step = int64_t(kColsY) * (kColsX / c.col_lanes);
    c.col_tiles = ceil_div(c.inner, tile_cols);
    c.tiles = tiles = (M / c.inner) * c.col_tiles;
    c.splits = splits = choose_splits(tiles, K, rows_per_step * kUnroll * 2, target);
    c.per_split = ceil_div(K, splits);
    c.step = step_digits(g.red, rows_per_step);
    lc.block = dim3(kColsX, kColsY);
    lc.partials = splits > 1 ? tiles * tile_cols * splits : 0;
  } else {
    RowsConfig& r = lc.rows;
    const int V = lc.strategy == Strategy::kRows ? vec_width<in_t>() : 1;
    const int64_t units = ceil_div(K, V);  // loads per row
    r.group = std::min(kRowsBlock, next_pow2(ceil_div(units, kUnroll)));
    r.tiles = tiles = ceil_div(M, kRowsBlock / r.group);
    r.splits = splits = choose_splits(tiles, units, int64_t(r.group) * kUnroll * 2, target);
    r.per_split = ceil_div(units, splits);
    r.step = step_digits(g.red, r.group);
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
      if (lc.vec_cols)
        cols_kernel<Op, in_t, out_t, vec_width<in_t>()>
            <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cols, partials, counters);
      else
        cols_kernel<Op, in_t, out_t, 1>
            <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cols, partials, counters);
      break;
  }
}

}  // namespace treduce
