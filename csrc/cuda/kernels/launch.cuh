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
#include <type_traits>

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
  bool packed = false;    // rows: whole rows inside each 16-byte vector (packed_rows_kernel)
  int64_t packed_vecs = 0;
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

// How many blocks to split K over when the tiles alone do not fill the GPU: the count whose
// blocks fill their last wave best (tiles * s against whole waves of `target` blocks; the
// smaller s on a tie), each split keeping about `min_units` units of work (the last may get less). A split count that
// overshoots one wave by a few blocks would leave most SMs idle in the second.
inline int choose_splits(int64_t tiles, int64_t units, int64_t min_units, int64_t target) {
  if (tiles >= target) return 1;
  const int64_t most = std::min(std::max<int64_t>(1, ceil_div(units, min_units)), kMaxSplits);
  int64_t best = 1;
  double best_fill = 0.0;
  // The candidates: the most splits that fit in w whole waves, w = 1..4.
  for (int w = 1; w <= 4; ++w) {
    const int64_t s = std::min(most, std::max<int64_t>(1, w * target / tiles));
    const int64_t blocks = tiles * s;
    const double fill = double(blocks) / double(ceil_div(blocks, target) * target);
    if (fill > best_fill + 1e-9 || (fill > best_fill - 1e-9 && s < best)) {
      best = s;
      best_fill = fill;
    }
  }
  return static_cast<int>(best);
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
int blocks_per_sm(Strategy s, bool vec_cols, bool packed) {
  if (packed) {  // the K = 2 variant stands for all (they differ by a few registers)
    static const int n = occupancy(packed_rows_kernel<Op, in_t, out_t, 2>, kRowsBlock);
    return n;
  }
  if (s == Strategy::kColumns && vec_cols) {
    static const int n = occupancy(cols_kernel<Op, in_t, out_t, cols_vec<Op, in_t>()>,
                                   kColsX * kColsY);
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

// Whether every column group of V = cols_vec() outputs is aligned for one V-element load at every
// reduced element: aligned base, inner size a multiple of V, and every other stride a multiple of it.
template <class Op, class in_t>
bool columns_vectorizable(const Geometry& g, const void* in) {
  constexpr int V = cols_vec<Op, in_t>();
  if (reinterpret_cast<uintptr_t>(in) % (V * sizeof(in_t)) != 0) return false;
  if (g.kept.sizes[g.kept.ndim - 1] % V != 0) return false;
  for (int d = 0; d + 1 < g.kept.ndim; ++d)
    if (g.kept.in_strides[d] % V != 0) return false;
  for (int d = 0; d < g.red.ndim; ++d)
    if (g.red.in_strides[d] % V != 0) return false;
  return true;
}

// Whether the reduced dims are runs of whole 16-byte vectors: the innermost has stride 1 and a
// size that is a multiple of V, every other reduced and kept stride is a multiple of V, and the
// base is aligned. Then the row kernel reads each run with vector loads (NCHW statistics).
template <class in_t>
bool vector_runs(const Geometry& g, const void* in) {
  constexpr int V = vec_width<in_t>();
  const int last = g.red.ndim - 1;
  if (g.red.ndim < 2 || g.red.in_strides[last] != 1 || g.red.sizes[last] % V != 0) return false;
  if (reinterpret_cast<uintptr_t>(in) % 16 != 0) return false;
  for (int d = 0; d < last; ++d)
    if (g.red.in_strides[d] % V != 0) return false;
  for (int d = 0; d < g.kept.ndim; ++d)
    if (g.kept.in_strides[d] % V != 0) return false;
  return true;
}

// Whether rows of K contiguous elements lie back to back with K * sizeof(in_t) dividing 16, the
// base aligned and the output contiguous: then one vector holds whole rows (packed_rows_kernel).
template <class in_t>
bool rows_packable(const Geometry& g, const void* in) {
  constexpr int V = vec_width<in_t>();
  const int64_t K = g.reduce_len;
  if (K < 2 || K > V || (K & (K - 1)) != 0) return false;  // K * size divides 16
  if (g.kept.ndim != 1 || g.kept.in_strides[0] != K || g.kept.out_strides[0] != 1) return false;
  return reinterpret_cast<uintptr_t>(in) % 16 == 0;
}

template <class Op, class in_t, class out_t>
Launch plan_launch(const Geometry& g, const in_t* in, int sm_count) {
  Launch lc;
  lc.strategy = choose_strategy(g);
  lc.vec_cols = lc.strategy == Strategy::kColumns && columns_vectorizable<Op, in_t>(g, in);
  if (lc.strategy == Strategy::kStrided && vector_runs<in_t>(g, in)) {
    lc.strategy = Strategy::kRows;  // runs of vectors: the walk's map counts vectors innermost
    lc.rows.vred = g.red;
    lc.rows.vred.sizes[g.red.ndim - 1] /= vec_width<in_t>();
    lc.rows.vred.in_strides[g.red.ndim - 1] = vec_width<in_t>();
  }
  lc.packed = lc.strategy == Strategy::kRows && lc.rows.vred.ndim == 0 &&
              rows_packable<in_t>(g, in);
  const int64_t target =
      int64_t(sm_count) * blocks_per_sm<Op, in_t, out_t>(lc.strategy, lc.vec_cols, lc.packed);
  const int64_t cap = target * kGridCapWaves;
  const int64_t M = g.num_outputs, K = g.reduce_len;
  int splits = 1;
  int64_t tiles = 0;

  if (lc.packed) {
    lc.packed_vecs = M * K / vec_width<in_t>();
    lc.block = dim3(kRowsBlock);
    lc.grid = dim3(static_cast<unsigned>(
        std::max<int64_t>(1, std::min(ceil_div(lc.packed_vecs, kRowsBlock * kUnroll), cap))));
    return lc;
  }
  if (lc.strategy == Strategy::kColumns) {
    ColsConfig& c = lc.cols;
    const int V = lc.vec_cols ? cols_vec<Op, in_t>() : 1;
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
    // A split keeps each thread at least one batch of kUnroll loads: small inputs then spread
    // over more blocks, and each thread waits for memory once (latency-bound sizes).
    r.splits = splits = choose_splits(tiles, units, int64_t(r.group) * kUnroll, target);
    r.per_split = ceil_div(units, splits);
    r.step = step_digits(r.vred.ndim > 1 ? r.vred : g.red, r.group);
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
  if (lc.packed) {  // K is 2, 4, 8 or 16, at most V (rows_packable)
    constexpr int V = vec_width<in_t>();
    auto packed = [&](auto k) {
      constexpr int kK = decltype(k)::value;
      if constexpr (kK <= V)
        packed_rows_kernel<Op, in_t, out_t, kK>
            <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.packed_vecs);
    };
    switch (g.reduce_len) {
      case 2: packed(std::integral_constant<int, 2>{}); break;
      case 4: packed(std::integral_constant<int, 4>{}); break;
      case 8: packed(std::integral_constant<int, 8>{}); break;
      default: packed(std::integral_constant<int, 16>{}); break;
    }
    return;
  }
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
        cols_kernel<Op, in_t, out_t, cols_vec<Op, in_t>()>
            <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cols, partials, counters);
      else
        cols_kernel<Op, in_t, out_t, 1>
            <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cols, partials, counters);
      break;
  }
}

}  // namespace treduce
