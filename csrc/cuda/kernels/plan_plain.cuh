// plan_plain.cuh: the plain planner, from a Geometry to a launch of the row, column or packed
// row kernels (every op but the canonical floating sums and means). Raw CUDA, nothing from torch.
//
//   Launch lc = plan_launch<Op, in_t, out_t>(geom, in, sm_count);  // strategy, grid, scratch
//   ... the caller provides lc.partials acc_t slots and lc.counters zeroed counters ...
//   run_launch<Op, in_t, out_t>(lc, geom, in, out, partials, counters, stream);
//
#pragma once
#include <type_traits>

#include "cols.cuh"
#include "launch_common.cuh"
#include "rows.cuh"

namespace treduce {

struct Launch {
  Strategy strategy = Strategy::kRows;
  bool vec_cols = false;  // columns with 16-byte loads across neighbouring outputs
  bool packed = false;    // rows: whole rows inside each 16-byte vector (packed_rows_kernel)
  bool step_two = false;  // rows: one run at stride 2, read as 16-byte vectors (kLoadStepTwo)
  int64_t packed_vecs = 0;
  RowsConfig rows{};
  ColsConfig cols{};
  dim3 grid, block;
  int64_t partials = 0;  // acc_t scratch slots (0 when nothing is split)
  int64_t counters = 0;  // zeroed counters (0 when nothing is split)
};

// The longest rows packed_rows_kernel takes for the plain planner: 16 vectors, at most 128
// elements (the canonical sums take rows of one vector at most: whole leaves, folded in order).
// bfloat16 amax rows of 128 went through rows_kernel (four lanes per row) at 88% of the read
// stream, 82.1 -> 76.1 µs packed; but bfloat16 argmax rows of 128 106.1 -> 151.1, so argmax and
// argmin (kNeedsIndex) stop at 8 vectors, 64 elements.
template <class Op, class in_t>
constexpr int kPackedMaxK =
    Op::kNeedsIndex ? std::min(8 * vec_width<in_t>(), 64) : std::min(16 * vec_width<in_t>(), 128);

// Occupancy of packed_rows_kernel: the K = 2 variant stands for all (they differ by a few
// registers). Its own function, so that the canonical planner's query for it does not
// instantiate the row and column kernels of blocks_per_sm's other branches for the canonical
// ops, which never launch them (72 kernels of the build).
template <class Op, class in_t, class out_t>
int packed_blocks_per_sm() {
  static const int n = occupancy(packed_rows_kernel<Op, in_t, out_t, 2>, kRowsBlock);
  return n;
}

// Occupancy of the kernel that run_launch() will start for `s`, computed once per kernel.
template <class Op, class in_t, class out_t>
int blocks_per_sm(Strategy s, bool vec_cols, bool packed, bool step_two) {
  if (packed) return packed_blocks_per_sm<Op, in_t, out_t>();
  if constexpr (kStepTwoLoads<in_t>) {
    if (step_two) {
      static const int n = occupancy(rows_kernel<Op, in_t, out_t, kLoadStepTwo>, kRowsBlock);
      return n;
    }
  }
  if (s == Strategy::kColumns && vec_cols) {
    static const int n =
        occupancy(cols_kernel<Op, in_t, out_t, cols_vec<Op, in_t>()>, kColsX * kColsY);
    return n;
  }
  switch (s) {
    case Strategy::kRows: {
      static const int n = occupancy(rows_kernel<Op, in_t, out_t, kLoadVectors>, kRowsBlock);
      return n;
    }
    case Strategy::kStrided: {
      static const int n = occupancy(rows_kernel<Op, in_t, out_t, kLoadWalk>, kRowsBlock);
      return n;
    }
    default: {
      static const int n = occupancy(cols_kernel<Op, in_t, out_t, 1>, kColsX * kColsY);
      return n;
    }
  }
}

template <class Op, class in_t>
bool columns_vectorizable(const Geometry& g, const void* in) {
  return columns_aligned(g, in, cols_vec<Op, in_t>(), sizeof(in_t));
}

// The packed row kernel's grid for `packed_vecs` vectors: a batch of kUnroll vectors per thread,
// at most kGridCapWaves waves of `target` resident blocks (both planners use it).
inline dim3 packed_grid(int64_t packed_vecs, int64_t target) {
  return dim3(static_cast<unsigned>(std::max<int64_t>(
      1, std::min(ceil_div(packed_vecs, kRowsBlock * kUnroll), target * kGridCapWaves))));
}

// vec_cols: -1 the vector column variant wherever the geometry is aligned for it, 0 never (one
// output a thread; treduce._force_launch's "vec=0", for tests and the bench).
template <class Op, class in_t, class out_t>
Launch plan_launch(const Geometry& g, const in_t* in, int sm_count, int vec_cols = -1) {
  Launch lc;
  lc.strategy = choose_strategy(g);
  lc.vec_cols =
      lc.strategy == Strategy::kColumns && vec_cols != 0 && columns_vectorizable<Op, in_t>(g, in);
  if (lc.strategy == Strategy::kStrided && vector_runs<in_t>(g, in)) {
    lc.strategy = Strategy::kRows;  // runs of vectors: the walk's map counts vectors innermost
    lc.rows.vred = g.red;
    lc.rows.vred.sizes[g.red.ndim - 1] /= vec_width<in_t>();
    lc.rows.vred.in_strides[g.red.ndim - 1] = vec_width<in_t>();
  } else if (lc.strategy == Strategy::kStrided && step_two_rows<in_t>(g)) {
    lc.strategy = Strategy::kRows;
    lc.step_two = true;
  }
  lc.packed = lc.strategy == Strategy::kRows && lc.rows.vred.ndim == 0 && !lc.step_two &&
              rows_packable<in_t, kPackedMaxK<Op, in_t>>(g, in);
  const int64_t target = int64_t(sm_count) * blocks_per_sm<Op, in_t, out_t>(
                                                 lc.strategy, lc.vec_cols, lc.packed, lc.step_two);
  const int64_t cap = target * kGridCapWaves;
  const int64_t M = g.num_outputs, K = g.reduce_len;
  int splits = 1;
  int64_t tiles = 0;

  if (lc.packed) {
    lc.packed_vecs = M * K / vec_width<in_t>();
    lc.block = dim3(kRowsBlock);
    lc.grid = packed_grid(lc.packed_vecs, target);
    return lc;
  }
  if (lc.strategy == Strategy::kColumns) {
    ColsConfig& c = lc.cols;
    const int V = lc.vec_cols ? cols_vec<Op, in_t>() : 1;
    c.inner = g.kept.sizes[g.kept.ndim - 1];
    c.col_lanes = static_cast<int>(std::min<int64_t>(kColsX, next_pow2(ceil_div(c.inner, V))));
    const int64_t tile_cols = int64_t(c.col_lanes) * V;
    const int64_t rows_per_step = int64_t(kColsY) * (kColsX / c.col_lanes);
    c.col_tiles = ceil_div(c.inner, tile_cols);
    c.tiles = tiles = (M / c.inner) * c.col_tiles;
    // A batch: the rows of one round of the kernel's loads in flight (cols_unroll per thread).
    const int unroll =
        lc.vec_cols ? cols_unroll<Op, in_t, cols_vec<Op, in_t>()>() : cols_unroll<Op, in_t, 1>();
    const int64_t batch = rows_per_step * unroll;
    splits = tiles <= kCounterCapacity ? choose_splits(tiles, K, batch * 2, target) : 1;
    // Splits of whole batches: a remainder is read one load at a time, each load a full memory
    // latency ((4096, 4096) bf16 amax: 171 rows per split, 43 of them single, 28.9 µs).
    // The last split takes what is left. K > 0 here (run_reduce fills empty
    // reductions without a launch).
    c.per_split = ceil_div(ceil_div(K, splits), batch) * batch;
    c.splits = splits = static_cast<int>(ceil_div(K, c.per_split));
    c.step = step_digits(g.red, rows_per_step);
    lc.block = dim3(kColsX, kColsY);
    lc.partials = splits > 1 ? tiles * tile_cols * splits : 0;
  } else {
    RowsConfig& r = lc.rows;
    const int V = lc.strategy == Strategy::kRows ? vec_width<in_t>() : 1;
    const int64_t units = ceil_div(lc.step_two ? 2 * K - 1 : K, V);  // loads per row
    r.group = static_cast<int>(std::min<int64_t>(kRowsBlock, next_pow2(ceil_div(units, kUnroll))));
    r.tiles = tiles = ceil_div(M, kRowsBlock / r.group);
    // A split keeps each thread at least one batch of kUnroll loads: small inputs then spread
    // over more blocks, and each thread waits for memory once (latency-bound sizes). Split
    // tiles need a counter each: more tiles than counters run unsplit.
    r.splits = splits = tiles <= kCounterCapacity
                            ? choose_splits(tiles, units, int64_t(r.group) * kUnroll, target)
                            : 1;
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

// packed_rows_kernel for K = 2, 4, ..., 128, at most kMaxK (rows_packable<in_t, kMaxK>).
template <class Op, int kMaxK, class in_t, class out_t>
void run_packed(const Geometry& g, const in_t* in, out_t* out, int64_t nvec, dim3 grid, dim3 block,
                cudaStream_t stream) {
  auto packed = [&](auto k) {
    constexpr int kK = decltype(k)::value;
    if constexpr (kK <= kMaxK)
      packed_rows_kernel<Op, in_t, out_t, kK><<<grid, block, 0, stream>>>(in, out, g, nvec);
  };
  switch (g.reduce_len) {
    case 2:
      packed(std::integral_constant<int, 2>{});
      break;
    case 4:
      packed(std::integral_constant<int, 4>{});
      break;
    case 8:
      packed(std::integral_constant<int, 8>{});
      break;
    case 16:
      packed(std::integral_constant<int, 16>{});
      break;
    case 32:
      packed(std::integral_constant<int, 32>{});
      break;
    case 64:
      packed(std::integral_constant<int, 64>{});
      break;
    default:
      packed(std::integral_constant<int, 128>{});
      break;
  }
}

template <class Op, class in_t, class out_t>
void run_launch(const Launch& lc, const Geometry& g, const in_t* in, out_t* out,
                typename Op::acc_t* partials, unsigned* counters, cudaStream_t stream) {
  if (lc.packed) {
    run_packed<Op, kPackedMaxK<Op, in_t>>(g, in, out, lc.packed_vecs, lc.grid, lc.block, stream);
    return;
  }
  switch (lc.strategy) {
    case Strategy::kRows:
      if constexpr (kStepTwoLoads<in_t>) {
        if (lc.step_two) {
          rows_kernel<Op, in_t, out_t, kLoadStepTwo>
              <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.rows, partials, counters);
          break;
        }
      }
      rows_kernel<Op, in_t, out_t, kLoadVectors>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.rows, partials, counters);
      break;
    case Strategy::kStrided:
      rows_kernel<Op, in_t, out_t, kLoadWalk>
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
