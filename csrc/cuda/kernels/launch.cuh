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
#include <atomic>
#include <queue>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../../geometry.h"
#include "canon.cuh"
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

// The longest rows packed_rows_kernel takes for the plain planner: 16 vectors, at most 128
// elements (the canonical sums take rows of one vector at most: whole leaves, folded in order).
// bfloat16 amax rows of 128 went through rows_kernel (four lanes per row) at 88% of the read
// stream, 82.1 -> 76.1 µs packed; but bfloat16 argmax rows of 128 106.1 -> 151.1, so argmax and
// argmin (kNeedsIndex) stop at 8 vectors, 64 elements (NOTES step 80).
template <class Op, class in_t>
constexpr int kPackedMaxK =
    Op::kNeedsIndex ? std::min(8 * vec_width<in_t>(), 64) : std::min(16 * vec_width<in_t>(), 128);

// Inputs of fewer than this many bytes are read with evict-first 16-byte loads (Geometry::
// evict_first, load_in). After a write that leaves L2 dirty (do_bench's flush, or the kernel
// that produced the input), a read-only stream of 64 / 128 MB took 26.2 / 42.3 µs with plain
// loads and 23.2 / 39.1 evict-first; 256 MB the same (72.6 / 72.2), and short f32 rows of 256 MB
// lost 6%; 1 GB 248 against 260 (NOTES step 49). Plain loads below 16 MB measured no faster
// (NOTES step 54).
constexpr int64_t kEvictFirstMaxBytes = int64_t(256) << 20;

// The geometry a launch passes to the kernels: the plan's, with the input's load policy.
inline Geometry launch_geometry(const Geometry& plan_geom, int64_t elem_size) {
  Geometry g = plan_geom;
  g.evict_first = g.num_outputs * g.reduce_len * elem_size < kEvictFirstMaxBytes;
  return g;
}

// The least power of two >= v (1 for v <= 1), exact for every v up to 2^62; the callers clamp
// it to their own range before narrowing it.
inline int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t(1) << 62)) p <<= 1;
  return p;
}

// How many blocks to split K over when the tiles alone do not fill the GPU: the count whose
// blocks fill their last wave best (tiles * s against whole waves of `target` blocks; the
// smaller s on a tie), each split keeping about `min_units` units of work (the last may get less).
// A split count that overshoots one wave by a few blocks would leave most SMs idle in the second.
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

// The makespan, in rounds, of a grid of `tiles` x `blocks` whose block y takes splits y,
// y + blocks, ... of `splits` (`rps` rounds each). `listed`: the blocks started in launch order
// (x fastest) on `slots` resident slots, each block on the first slot free; otherwise, and for
// grids of more than 2^16 blocks, whole waves of the busiest block.
inline int64_t split_makespan(int64_t tiles, int64_t blocks, int64_t splits, int64_t rps,
                              int64_t slots, bool listed) {
  const int64_t busiest = ceil_div(splits, blocks) * rps;
  if (!listed || tiles * blocks > (int64_t(1) << 16) || slots < 1)
    return ceil_div(tiles * blocks, std::max<int64_t>(slots, 1)) * busiest;
  if (tiles * blocks <= slots) return busiest;
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> free_at;
  for (int64_t i = 0; i < slots; ++i) free_at.push(0);
  int64_t end = 0;
  for (int64_t y = 0; y < blocks; ++y) {
    const int64_t rounds = ceil_div(splits - y, blocks) * rps;
    for (int64_t x = 0; x < tiles; ++x) {
      const int64_t t = free_at.top() + rounds;
      free_at.pop();
      free_at.push(t);
      end = std::max(end, t);
    }
  }
  return end;
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

// A launch configuration with clusters of `cluster` blocks (cluster.x along x, cluster.y along
// y) and `smem` bytes of dynamic shared memory; `at` holds its attribute.
inline cudaLaunchConfig_t cluster_config(dim3 grid, dim3 block, dim3 cluster, size_t smem,
                                         cudaStream_t stream, cudaLaunchAttribute& at) {
  at = cudaLaunchAttribute{};
  at.id = cudaLaunchAttributeClusterDimension;
  at.val.clusterDim.x = cluster.x;
  at.val.clusterDim.y = cluster.y;
  at.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = &at;
  cfg.numAttrs = 1;
  return cfg;
}

// The largest thread-block cluster, up to 16 blocks of `threads` threads of `kernel`, that the
// GPU can place (sizes over 8 are allowed for the kernel here), or 1 where none fits.
template <class Kernel>
int max_cluster(Kernel kernel, int threads) {
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  for (unsigned s = 16; s > 1; s /= 2) {
    cudaLaunchAttribute at;
    const cudaLaunchConfig_t cfg =
        cluster_config(dim3(1, s, 1), dim3(threads), dim3(1, s, 1), 0, nullptr, at);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) == cudaSuccess && n > 0)
      return static_cast<int>(s);
    (void)cudaGetLastError();
  }
  return 1;
}

// Launches `kernel` with clusters of `cluster` blocks (grid a multiple of it along x and y) and
// `smem` bytes of dynamic shared memory. A failed launch leaves its error for the caller's
// launch check.
template <class... Params, class... Args>
void launch_in_clusters(void (*kernel)(Params...), dim3 grid, dim3 block, dim3 cluster, size_t smem,
                        cudaStream_t stream, Args... args) {
  cudaLaunchAttribute at;
  const cudaLaunchConfig_t cfg = cluster_config(grid, block, cluster, smem, stream, at);
  (void)cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
}

// launch_in_clusters for kKernel. Clusters of more than 8 need the kernel's non-portable
// attribute on the current device, set here once per kernel (the template argument: kernels of
// one signature share no flag) and device.
template <auto kKernel, class... Args>
void launch_cluster(dim3 grid, dim3 block, dim3 cluster, size_t smem, cudaStream_t stream,
                    Args... args) {
  if (cluster.x * cluster.y > 8) {
    static std::atomic<bool> allowed[64] = {};  // calls may come from several host threads
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < 64 && !allowed[dev].load())
      allowed[dev].store(cudaFuncSetAttribute(kKernel,
                                              cudaFuncAttributeNonPortableClusterSizeAllowed,
                                              1) == cudaSuccess);
  }
  launch_in_clusters(kKernel, grid, block, cluster, smem, stream, args...);
}

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
int blocks_per_sm(Strategy s, bool vec_cols, bool packed) {
  if (packed) return packed_blocks_per_sm<Op, in_t, out_t>();
  if (s == Strategy::kColumns && vec_cols) {
    static const int n =
        occupancy(cols_kernel<Op, in_t, out_t, cols_vec<Op, in_t>()>, kColsX * kColsY);
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

// Whether every group of V neighbouring outputs can be read with one V-element load at every
// reduced element: aligned base, inner size a multiple of V, and every other stride a multiple
// of it.
inline bool columns_aligned(const Geometry& g, const void* in, int V, int elem_size) {
  if (reinterpret_cast<uintptr_t>(in) % (uintptr_t(V) * elem_size) != 0) return false;
  if (g.kept.sizes[g.kept.ndim - 1] % V != 0) return false;
  for (int d = 0; d + 1 < g.kept.ndim; ++d)
    if (g.kept.in_strides[d] % V != 0) return false;
  for (int d = 0; d < g.red.ndim; ++d)
    if (g.red.in_strides[d] % V != 0) return false;
  return true;
}

template <class Op, class in_t>
bool columns_vectorizable(const Geometry& g, const void* in) {
  return columns_aligned(g, in, cols_vec<Op, in_t>(), sizeof(in_t));
}

// Whether every reduced stride but the innermost and every kept stride is a whole number of
// 16-byte vectors (V = vec_width elements): then every run of the innermost reduced dim starts
// the same number of elements past a 16-byte boundary as the base does.
template <class in_t>
bool outer_strides_whole_vectors(const Geometry& g) {
  constexpr int V = vec_width<in_t>();
  for (int d = 0; d + 1 < g.red.ndim; ++d)
    if (g.red.in_strides[d] % V != 0) return false;
  for (int d = 0; d < g.kept.ndim; ++d)
    if (g.kept.in_strides[d] % V != 0) return false;
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
  return reinterpret_cast<uintptr_t>(in) % 16 == 0 && outer_strides_whole_vectors<in_t>(g);
}

// Whether each output's K elements are one stride-1 run, every run as many elements past a
// 16-byte boundary as the base: one reduced dim of stride 1 and kept strides that are whole
// 16-byte vectors.
template <class in_t>
bool one_run_rows(const Geometry& g) {
  return g.red.ndim == 1 && g.red.in_strides[0] == 1 && outer_strides_whole_vectors<in_t>(g);
}

// ... that start on a 16-byte boundary: one_run_rows and an aligned base.
template <class in_t>
bool aligned_rows(const Geometry& g, const void* in) {
  return one_run_rows<in_t>(g) && reinterpret_cast<uintptr_t>(in) % 16 == 0;
}

// ... for canon_small_kernel's chunks: aligned_rows, or one_run_rows from any base for the
// inputs whose chunks it folds off a boundary (fold_small_unaligned: stages_unaligned).
template <class Op, class in_t>
bool chunk_rows(const Geometry& g, const void* in) {
  return stages_unaligned<Op, in_t>() ? one_run_rows<in_t>(g) : aligned_rows<in_t>(g, in);
}

// Whether the column pairs' rows (innermost kept dim of stride 1, innermost reduced stride 2)
// start on 16-byte boundaries: an aligned base, and every other kept and reduced stride a whole
// number of vectors (canon_kernel<..., 2>'s staging).
template <class in_t>
bool column_pairs_aligned(const Geometry& g, const void* in) {
  constexpr int V = vec_width<in_t>();
  for (int d = 0; d + 1 < g.kept.ndim; ++d)
    if (g.kept.in_strides[d] % V != 0) return false;
  for (int d = 0; d + 1 < g.red.ndim; ++d)
    if (g.red.in_strides[d] % V != 0) return false;
  return reinterpret_cast<uintptr_t>(in) % 16 == 0 && g.kept.in_strides[g.kept.ndim - 1] == 1;
}

// Whether rows of K contiguous elements, K a power of two from 2 to kMaxK, lie back to back with
// the base aligned and the output contiguous: then packed_rows_kernel reads them as one stream of
// vectors (whole rows inside each vector for K <= V, which the canonical sums take: a row is one
// leaf; rows of up to kMaxK = 16 V elements over neighbouring lanes for the other ops).
template <class in_t, int kMaxK = vec_width<in_t>()>
bool rows_packable(const Geometry& g, const void* in) {
  const int64_t K = g.reduce_len;
  if (K < 2 || K > kMaxK || (K & (K - 1)) != 0) return false;
  if (g.kept.ndim != 1 || g.kept.in_strides[0] != K || g.kept.out_strides[0] != 1) return false;
  return reinterpret_cast<uintptr_t>(in) % 16 == 0;
}

// The packed row kernel's grid for `packed_vecs` vectors: a batch of kUnroll vectors per thread,
// at most kGridCapWaves waves of `target` resident blocks (both planners use it).
inline dim3 packed_grid(int64_t packed_vecs, int64_t target) {
  return dim3(static_cast<unsigned>(std::max<int64_t>(
      1, std::min(ceil_div(packed_vecs, kRowsBlock * kUnroll), target * kGridCapWaves))));
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
              rows_packable<in_t, kPackedMaxK<Op, in_t>>(g, in);
  const int64_t target =
      int64_t(sm_count) * blocks_per_sm<Op, in_t, out_t>(lc.strategy, lc.vec_cols, lc.packed);
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
    // latency ((4096, 4096) bf16 amax: 171 rows per split, 43 of them single, 28.9 µs; NOTES
    // step 45). The last split takes what is left. K > 0 here (run_reduce fills empty
    // reductions without a launch).
    c.per_split = ceil_div(ceil_div(K, splits), batch) * batch;
    c.splits = splits = static_cast<int>(ceil_div(K, c.per_split));
    c.step = step_digits(g.red, rows_per_step);
    lc.block = dim3(kColsX, kColsY);
    lc.partials = splits > 1 ? tiles * tile_cols * splits : 0;
  } else {
    RowsConfig& r = lc.rows;
    const int V = lc.strategy == Strategy::kRows ? vec_width<in_t>() : 1;
    const int64_t units = ceil_div(K, V);  // loads per row
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

// ---- canonical sums and means (canon.cuh) ----

// A forced configuration for tests (TREDUCE_CANON_LAUNCH, see reduce_cuda.cu): 0 means automatic.
struct CanonOverride {
  int y = 0;         // leaf lanes per block (a power of two dividing kCanonThreads)
  int splits = 0;    // blocks per tile along K
  int rounds = 0;    // rounds per split (a power of two)
  int per = 0;       // leaves per thread per round (1 or 2)
  int lat = -1;      // the latency kernel (kLat): -1 automatic, 0 never, 1 wherever the shape
                     // allows it (one split per block; splits <= the cluster limit, <= Y, and
                     // splits x output lanes <= kClusterSlots)
  int small = -1;    // canon_small_kernel: -1 automatic, 0 never, 1 wherever the layout allows it
  int threads = 0;   // canon_small_kernel's chunks: threads per block (64, 128 or 256)
  int loop = 0;      // chunks per block (canon_small_loop_kernel: chunk_loop)
  int cluster = -1;  // canon_small_kernel's chunks merged in a cluster (chunk_cluster): -1
                     // automatic, 0 never, 1 wherever allowed
  int whole = -1;    // one block per output through canon_small_kernel's kWhole instantiation:
                     // -1 automatic (launch_small), 0 never, 1 always
};

struct CanonLaunch {
  CanonConfig cfg{};
  int pair = 0;             // rows of 2 or 4 aligned 16-byte vectors: pair_rows_kernel<..., pair>
  bool packed = false;      // rows of K = 2, 4, 8, 16 inside 16-byte vectors: packed_rows_kernel,
  int64_t packed_vecs = 0;  // whose in-order fold of a whole row is the canonical order (one leaf)
  int vec = 1;              // outputs per thread (canon_vec() or 1)
  bool lat = false;         // canon_kernel<..., kLat = true>: clusters of cfg.splits blocks along y
  bool small = false;       // canon_small_kernel: one block of `block` threads per output
  int64_t chunk = 0;     // ... or per chunk of this many elements of an output (grid: chunks x M)
  bool cluster = false;  // ... whose chunks are merged in a cluster of gridDim.x blocks
  int whole = -1;        // ... (chunk = 0) through its kWhole instantiation: -1 automatic
                         // (launch_small), 0 never, 1 always
  bool stage = false;    // columns: canon_kernel<..., kStage = true> (rows of exactly vec outputs)
  bool inter = false;    // mid dims of X interleaved outputs: canon_kernel<..., kInter = true>
  dim3 grid, block;
  int64_t partials = 0;
  int64_t counters = 0;
  bool ok = true;  // false: more split tiles than counters (K over 2^20 rounds, many tiles)
};

// The largest cluster the latency kernel can be launched with (max_cluster), once per kernel.
template <class Op, class in_t, class out_t, bool kInter = false>
int canon_max_cluster() {
  static const int n =
      max_cluster(canon_kernel<Op, in_t, out_t, 1, 1, true, false, kInter>, kCanonThreads);
  return n;
}

template <class Op, class in_t, class out_t>
int canon_blocks_per_sm(int vec, int per = 1) {
  if constexpr (canon_vec<in_t>() != 2 && canon_stage_fits<Op>(2)) {
    if (vec == 2) {  // float32 pairs: only the staged kernel
      static const int n =
          occupancy(canon_kernel<Op, in_t, out_t, 2, 1, false, true>, kCanonThreads);
      return n;
    }
  }
  if (vec > 1) {
    static const int n = occupancy(canon_kernel<Op, in_t, out_t, canon_vec<in_t>()>, kCanonThreads);
    return n;
  }
  if (per > 1) {
    static const int n =
        occupancy(canon_kernel<Op, in_t, out_t, 1, canon_per<in_t>()>, kCanonThreads);
    return n;
  }
  static const int n = occupancy(canon_kernel<Op, in_t, out_t, 1>, kCanonThreads);
  return n;
}

// Rows of 2 or 4 16-byte vectors, each starting on a 16-byte boundary (pair_rows_kernel): one
// stride-1 reduced dim of 32 or 64 bytes, an aligned base and kept strides that are multiples
// of 16 bytes. Returns the vectors per row, or 0.
template <class in_t>
int pair_rows(const Geometry& g, const void* in) {
  const int64_t bytes = g.reduce_len * int64_t(sizeof(in_t));
  if ((bytes != 32 && bytes != 64) || !aligned_rows<in_t>(g, in)) return 0;
  return static_cast<int>(bytes / 16);
}

// Leaves per thread of canon_small_kernel for K reduced elements: 1, or 2 past kCanonThreads
// leaves for 1- and 2-byte inputs (canon_per).
template <class in_t>
int small_leaves_per_thread(int64_t K) {
  return canon_per<in_t>() == 2 && K > int64_t(kCanonThreads) * kCanonLeaf ? 2 : 1;
}

// canon_small_kernel's block for an output of K elements at `per` leaves per thread: the leaves
// over `per`, rounded up to a power of two, at least a warp; 0 past kCanonThreads x per leaves.
inline int small_threads(int64_t K, int per) {
  if (K < 1 || K > int64_t(kCanonThreads) * kCanonLeaf * per) return 0;
  return static_cast<int>(std::max<int64_t>(32, next_pow2(ceil_div(K, kCanonLeaf * per))));
}

// Outputs that canon_small_kernel can take one block each, and its block size (small_threads),
// or 0: each output's K elements one stride-1 run whose kept strides are whole 16-byte vectors
// (one_run_rows), and either
// - from an aligned base, small_leaves_per_thread leaves per thread (up to kCanonThreads
//   leaves, twice as many for 1- and 2-byte inputs), or
// - from a base off a 16-byte boundary, every run as far off as the base, for the inputs that
//   fold whole leaves there (small_unaligned: canon_small_kernel<..., kUnaligned = true>):
//   small_leaves_per_thread leaves per thread, as aligned ones (16-bit inputs since NOTES step
//   124, µs against two per thread: bfloat16 rows (16384, 16384) + 1 145.8 -> 133.1, (65536,
//   4096) + 1 159.1 -> 130.8, against 130.0 and 132.8 aligned), but always two for 8-bit
//   inputs (their kUnaligned kernel has canon_per leaves per thread only).
template <class Op, class in_t>
int small_block(const Geometry& g, const void* in) {
  constexpr int per = canon_per<in_t>();
  const int64_t K = g.reduce_len;
  if (!one_run_rows<in_t>(g)) return 0;
  if (reinterpret_cast<uintptr_t>(in) % 16 == 0)
    return small_threads(K, small_leaves_per_thread<in_t>(K));
  if constexpr (!small_unaligned<Op, in_t, per>()) return 0;
  return small_threads(K, sizeof(in_t) == 1 ? per : small_leaves_per_thread<in_t>(K));
}

// Where outputs longer than one block's leaves run in chunks of them by default (M outputs of
// `chunks` chunks each; NOTES steps 90, 92 and 99, GPU times with the L2 dirtied as in the
// bench, µs). Full sums from 32 chunks: float32 (2^19 10.2 -> 8.5, 2^20 10.3 -> 9.5, 2^23 19.6 ->
// 16.9, 2^28 265.2 -> 257.9, 2^30 1011 -> 991; 16 chunks, 2^18, 7.6 -> 8.5) and 16-bit inputs
// (bfloat16 2^20 9.8 / 5.8 -> 8.2 / 4.4 eager / in a CUDA graph, 2^21 10.5 / 6.2 -> 9.1 / 4.7 in
// chunks of 128 threads (step 99); before those, 64 chunks of 256 threads, 2^21, 10.0 -> 10.3).
// Rows: float32 and 16-bit from 128 chunks where there are at most half as many outputs as
// SMs ((64, 65536) float32 13.4 -> 12.7, bfloat16 11.3 -> 11.0; (32, 2^20) float32 47.7 ->
// 43.9; but (8, 131072), 64 and 32 chunks, 8.4 -> 8.9 and 7.8 -> 9.0), and every dtype from 16
// chunks per SM (rows (1024, 262144) float32 267.2 -> 250.7; bfloat16 (256, 65536), 512
// chunks, 19.4 -> 20.5). float64 (2^24-2^26 equal) and 1-byte inputs only from 16 per SM.
template <class in_t>
bool chunks_auto(int64_t M, int64_t chunks, int sm_count) {
  constexpr bool measured = sizeof(in_t) == 4 || sizeof(in_t) == 2;
  const int64_t total = M * chunks;
  if (total >= 16 * int64_t(sm_count)) return true;
  if (!measured) return false;
  if (M == 1) return total >= 32;
  return 2 * M <= sm_count && total >= 128;
}

// Chunks of one leaf per thread that an aligned 16-bit output must have for chunk_loop's four per
// block; chunk_per gives such outputs one leaf per thread. Where there are more than 8192 such
// chunks in all, kChunkLoopFourRow per output are enough.
constexpr int64_t kChunkLoopFour = 8192;
constexpr int64_t kChunkLoopFourRow = 8;

// Inputs whose aligned chunks of one leaf per thread may run several per block
// (canon_small_loop_kernel is instantiated for these only).
template <class in_t>
constexpr bool chunks_loop() {
  return sizeof(in_t) == 4 || sizeof(in_t) == 2;
}

// Leaves per thread of canon_small_kernel's chunks: canon_per (two for 1- and 2-byte inputs),
// but one for 16-bit inputs that start aligned (16384 elements, 32 KB blocks at five per SM
// against 64 KB ones at four) where such chunks number at most 8192 in all (NOTES step 98, µs:
// float16 2^24 21.6 -> 18.4, 2^26 49.1 -> 44.3, bfloat16 rows (32, 2^20) 31.4 -> 27.7; 2^27
// within 1%) or where an output has at least 8192 of them, which chunk_loop takes four per
// block (NOTES step 104: float16 2^29 270.0 -> 262.6), and where there are more than 8192
// in all and at least kChunkLoopFourRow per output, which chunk_loop also takes four per block
// (NOTES step 109, µs against two leaves per thread in one process: bfloat16 rows (1024, 2^18)
// 141.0 -> 139.0, (2048, 131072), 8 chunks each, 144.1 -> 141.1; float16 (256, 2^20) 140.5 ->
// 138.3, (520, 2^18) 82.8 -> 80.9). More of them one per block measured slower than two leaves
// (float16 2^29 270.3 -> 288.0, step 98; bfloat16 (1024, 2^18) 142.4): many outputs of fewer
// chunks each keep two (step 107; not measured in loops). 16-bit inputs from a base off a
// 16-byte boundary take the same rule, their leaves shifted one per lane (NOTES step 122, µs
// against two leaves per thread, one chunk per block, in one call: bfloat16 x[1:] 2^28 158.5
// -> 152.8, float16 x[1:] 2^29 301.5 -> 287.2, bfloat16 rows (1024, 262144) + 1 156.8 ->
// 151.4, bfloat16 x[3:] 2^24 20.3 -> 19.3); misaligned 8-bit inputs keep two. small=1,per=P
// forces P (at most canon_per).
template <class in_t>
int chunk_per(int64_t M, int64_t K, bool aligned, const CanonOverride& ov) {
  constexpr int most = canon_per<in_t>();
  if (most == 1 || (!aligned && sizeof(in_t) != 2)) return most;  // (misaligned 8-bit: two)
  if (ov.small > 0 && ov.per > 0) return std::min(ov.per, most);
  const int64_t chunks = ceil_div(K, int64_t(kCanonThreads) * kCanonLeaf);  // of one leaf each
  return sizeof(in_t) == 2 && (M * chunks <= 8192 || chunks >= kChunkLoopFourRow) ? 1 : most;
}

// Threads per block of canon_small_kernel's chunks (each chunk threads x per leaves, a node of
// the tree whatever its size; NOTES step 99, µs eager / in a CUDA graph): float32 chunks of 128
// threads (32 KB, as the 16-bit ones of one leaf per thread: step 98) where they number at
// most 2048 (2^24 27.2 / 21.6 -> 26.3 / 20.6, 2^22 12.8 / 6.8 -> 12.6 / 6.6; 2^25, 4096 of them,
// equal; 2^26, 8192, 77.8 / 67.0 -> 82.0 / 73.1), else 256; then
// halved while chunks of half the size would be at least 16 KB and number at most two per SM
// (float32 2^20: 64 chunks of 64 KB -> 256 of 16 KB, 10.4 / 5.0 -> 9.4 / 4.5; bfloat16 2^21:
// 128 of 32 KB -> 256 of 16 KB, 9.5 / 5.0 -> 9.1 / 4.7). threads=T forces T.
template <class in_t>
int chunk_threads(int64_t M, int64_t K, int per, int sm_count, const CanonOverride& ov) {
  if (ov.small > 0 && ov.threads > 0) return ov.threads;
  const auto chunks = [&](int t) { return M * ceil_div(K, int64_t(t) * kCanonLeaf * per); };
  int t = kCanonThreads;
  if (sizeof(in_t) == 4 && chunks(t / 2) <= 2048) t /= 2;
  while (t > 64 && int64_t(t / 2) * kCanonLeaf * per * int64_t(sizeof(in_t)) >= 16384 &&
         chunks(t / 2) <= 2 * int64_t(sm_count))
    t /= 2;
  return t;
}

// Chunks per block of canon_small_kernel's chunks of one leaf per thread (block x takes chunks
// x, x + grid, ...: the same nodes; canon_small_loop_kernel), for aligned 4- and 2-byte inputs
// and 2-byte ones off a 16-byte boundary (M outputs of `chunks` chunks each):
// - float32: two where an output has at least 2048 chunks (NOTES step 101, µs against one per
//   block in one call: 2^30 986.6 -> 964.8 (0.996x plain), 2^28 261.1 -> 256.0, 2^26 78.6 ->
//   77.4, 2^24 26.5 / 20.8 -> 25.8 / 20.0 in a CUDA graph; rows (1024, 262144), four chunks
//   each, equal), else one;
// - 16-bit: four where an output has at least 8192 chunks (NOTES step 104, against two leaves
//   per thread one chunk per block: float16 2^29 270.0 -> 262.6 µs, bfloat16 2^28 145.1 ->
//   142.5; against one per block: float16 2^27 83.4 -> 80.9; bfloat16 2^26, 4096 chunks,
//   43.7 -> 44.7 at two), else two where all outputs have 6 to 16 chunks per SM (the blocks
//   of one chunk would be one to three waves at five per SM, those of two at most two at four:
//   float16 2^24 18.8 / 12.9 -> 18.0 / 12.3 in a CUDA graph, 2^25 28.0 / 22.4 -> 27.5 / 22.0,
//   bfloat16 rows (32, 2^20) 28.3 / 22.2 -> 27.9 / 21.5; (64, 2^20), 31 per SM, 44.0 / 38.7
//   -> 45.1 / 37.6), else one; and four wherever there are more than 8192 in all (chunk_per
//   gives one leaf per thread there only from kChunkLoopFourRow per output; NOTES step 109:
//   bfloat16 rows (1024, 2^18) 142.4 µs at one per block, 139.0 at four).
// Misaligned 16-bit chunks follow the same rule (NOTES step 122: bfloat16 x[1:] 2^28, 16384
// chunks, 152.8 µs at four per block, 153.7 at one, 156.5 at two). One for misaligned float32
// views (measured no faster looped: 2^25 and 2^26 2% slower, 2^28 equal, NOTES step 120),
// float64 and two-leaf chunks (the loop kernel folds one leaf per thread). loop=C forces C
// where the kernel loops.
template <class in_t>
int chunk_loop(int64_t M, int64_t chunks, bool aligned, int per, int sm_count,
               const CanonOverride& ov) {
  if (!chunks_loop<in_t>() || (!aligned && sizeof(in_t) != 2) || per != 1) return 1;
  if (ov.small > 0 && ov.loop > 0) return ov.loop;
  if (sizeof(in_t) == 4) return chunks >= 2048 ? 2 : 1;
  if (chunks >= kChunkLoopFour || M * chunks > 8192) return 4;
  return M * chunks >= 6 * int64_t(sm_count) && M * chunks <= 16 * int64_t(sm_count) ? 2 : 1;
}

// Whether an output's chunks are the blocks of one thread-block cluster, which merges their
// nodes in the first block's shared memory (canon_small_kernel<..., kCluster = true>) instead
// of through partials in global memory and the atomic arrival: aligned chunks of one leaf per
// thread, one per block, 2 to kChunkCluster (portable clusters) per output (NOTES step 110, µs
// against the global merge in one process, eager / in a CUDA graph: float32 rows (64, 65536), 8
// chunks each, 12.7 / 6.7 -> 11.4 / 5.7, the merge after the last node 1.86 -> 0.74 µs;
// bfloat16 (48, 131072), 8 each, 12.1 / 7.0 -> 11.9 / 6.1; float32 (2048, 65536), 4 each,
// 136.8 -> 131.5: the blocks that do not merge leave at once, with no fence or atomic). cluster=1
// forces it wherever it is allowed, cluster=0 turns it off.
template <class in_t>
bool chunk_cluster(int64_t chunks, bool aligned, int per, int loop, bool clusters,
                   const CanonOverride& ov) {
  if (!clusters || !chunks_loop<in_t>() || !aligned || per != 1 || loop != 1 || chunks < 2 ||
      chunks > kChunkCluster)
    return false;
  return ov.cluster != 0;
}

// Rows that chunks_auto leaves to the latency kernel but that run in chunks of kCanonThreads
// one-leaf threads, each row's chunks the blocks of one cluster: at least two outputs whose
// chunks chunk_cluster merges (aligned float32 or 16-bit, 2 to kChunkCluster each; at most one
// block per SM in all, so chunk_per gives them one leaf per thread and chunk_loop one chunk per
// block) (NOTES step 112, µs eager / in a CUDA graph: float32 (8, 131072) 8.9 / 4.6 through
// the latency kernel's clusters of 16 blocks of 128 threads, 8.2 / 3.7 in clusters of 8 blocks
// of 256; plain 9.4 / 4.4). cluster=0 turns it off.
template <class in_t>
bool cluster_rows(int64_t M, int64_t K, bool aligned, int sm_count, bool clusters,
                  const CanonOverride& ov) {
  const int64_t chunks = ceil_div(K, int64_t(kCanonThreads) * kCanonLeaf);
  return M >= 2 && M * chunks <= sm_count &&
         chunk_cluster<in_t>(chunks, aligned, 1, 1, clusters, ov) &&
         !chunks_auto<in_t>(M, ceil_div(K, int64_t(kCanonThreads) * kCanonLeaf * canon_per<in_t>()),
                            sm_count);
}

// Block shape: each output gets as many leaf lanes as it has leaves (up to the whole block), and
// column layouts put at least up to 32 output lanes side by side (each reading kVec neighbouring
// outputs). Then the splits, as for the other kernels, rounded so that each split is
// a power-of-two run of rounds.
//
// `clusters`: the GPU has thread-block clusters (sm_90), which the latency kernel needs.
template <class Op, class in_t, class out_t>
CanonLaunch plan_canon(const Geometry& g, const in_t* in, int sm_count, const CanonOverride& ov,
                       bool clusters) {
  CanonLaunch lc;
  CanonConfig& c = lc.cfg;
  const int64_t M = g.num_outputs, K = g.reduce_len;
  const bool forced = ov.y > 0 || ov.splits > 0 || ov.rounds > 0 || ov.per > 0;
  // One block per output (canon_small_kernel) for rows and full sums of at most 256 leaves
  // (16384 float32 elements) that start aligned: where every block has an SM of its own, and
  // for more outputs where each has at least 64 leaves (NOTES step 69). In a CUDA graph, full
  // float32 sums of 2^10 took 1.85 µs against 2.58 through the latency kernel, 2^14 2.88
  // against 3.33; eager, rows (4096, 4096) 23.4 µs against 25.4, bfloat16 rows (16384, 16384)
  // 130.9 against 152.8; but rows of 16 leaves, (65536, 1024), 105.7 against 75.3 (half of each
  // block's warp idle). 257-512 leaves of 1- and 2-byte inputs (two per thread) only where
  // there are more than a third as many outputs as SMs, so that the latency kernel would give
  // each at most two SMs: bfloat16 rows (16384, 32768) 254.6 µs against 282.1, (64, 32768)
  // 8.45 / 4.03 (eager / graph) against 8.83 / 4.36, but the full sum of 2^15 7.20 / 3.70
  // against 6.46 / 3.20 (one SM converts all 32768 values: NOTES step 75). The same outputs
  // from a base off a 16-byte boundary (rows whose kept stride is whole vectors; NOTES step
  // 120) where each has at least 64 leaves and there are more than a third as many outputs as
  // SMs (misaligned float32 rows (16384, 16384) ran canon_kernel's rows, 268.4 µs against
  // 257.4): fewer outputs keep the kernels that split them over SMs (the unaligned fold is
  // slower per element), fewer leaves too (a warp of partial leaves folds element by element
  // there). Forced (small=1) wherever the layout allows it; a forced shape or latency kernel
  // turns it off.
  const int64_t leaves = ceil_div(K, kCanonLeaf);
  const bool small_auto = reinterpret_cast<uintptr_t>(in) % 16 != 0
                              ? leaves >= 64 && 3 * M > sm_count
                          : small_leaves_per_thread<in_t>(K) == 2 ? 3 * M > sm_count
                                                                  : M <= sm_count || leaves >= 64;
  if (const int t = small_block<Op, in_t>(g, in);
      t > 0 && M <= INT32_MAX &&
      (ov.small > 0 || (ov.small < 0 && !forced && ov.lat < 0 && small_auto))) {
    lc.small = true;
    lc.whole = ov.whole;
    lc.block = dim3(static_cast<unsigned>(t));
    lc.grid = dim3(static_cast<unsigned>(M));
    return lc;
  }
  // Longer outputs of the same layout in chunks of one block's leaves (canon_small_kernel with
  // chunk > 0) where chunks_auto says so (counted in chunks of canon_per leaves per thread) or
  // cluster_rows does (chunks of kCanonThreads threads, in clusters); forced with small=1
  // wherever the layout allows it. The leaves per thread: see chunk_per.
  const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0;
  const bool rows_in_clusters = cluster_rows<in_t>(M, K, aligned, sm_count, clusters, ov);
  if (const int64_t chunk = int64_t(kCanonThreads) * kCanonLeaf * canon_per<in_t>();
      K > chunk && M <= std::min<int64_t>(65535, kCounterCapacity) &&
      ceil_div(K, chunk) <= INT32_MAX && chunk_rows<Op, in_t>(g, in) &&
      (ov.small > 0 ||
       (ov.small < 0 && !forced && ov.lat < 0 &&
        (chunks_auto<in_t>(M, ceil_div(K, chunk), sm_count) || rows_in_clusters)))) {
    const int per = chunk_per<in_t>(M, K, aligned, ov);
    const int threads = rows_in_clusters && !(ov.small > 0 && ov.threads > 0)
                            ? kCanonThreads
                            : chunk_threads<in_t>(M, K, per, sm_count, ov);
    const int64_t len = int64_t(threads) * kCanonLeaf * per;
    const int64_t chunks = ceil_div(K, len);
    const int loop = chunk_loop<in_t>(M, chunks, aligned, per, sm_count, ov);
    lc.small = true;
    lc.chunk = len;
    lc.cluster = chunk_cluster<in_t>(chunks, aligned, per, loop, clusters, ov);
    c.per = per;
    lc.block = dim3(static_cast<unsigned>(threads));
    lc.grid = dim3(static_cast<unsigned>(ceil_div(chunks, loop)), static_cast<unsigned>(M));
    c.splits = static_cast<int>(chunks);
    c.merge_per_thread = static_cast<int>(next_pow2(ceil_div(chunks, int64_t(threads))));
    lc.partials = lc.cluster ? 0 : M * chunks;
    lc.counters = lc.cluster ? 0 : M;
    return lc;
  }
  if (!forced && choose_strategy(g) == Strategy::kRows && rows_packable<in_t>(g, in)) {
    lc.packed = true;
    lc.packed_vecs = M * K / vec_width<in_t>();
    lc.block = dim3(kRowsBlock);
    lc.grid =
        packed_grid(lc.packed_vecs, int64_t(sm_count) * packed_blocks_per_sm<Op, in_t, out_t>());
    return lc;
  }
  if (!forced) lc.pair = pair_rows<in_t>(g, in);
  if (lc.pair > 0) {
    static const int per_sm =
        std::min(occupancy(pair_rows_kernel<Op, in_t, out_t, 2>, kPairThreads),
                 occupancy(pair_rows_kernel<Op, in_t, out_t, 4>, kPairThreads));
    lc.block = dim3(kPairThreads);
    const int64_t rows_per_block = int64_t(kPairThreads) * (kPairLoads / lc.pair);
    lc.grid = dim3(static_cast<unsigned>(
        std::max<int64_t>(1, std::min(ceil_div(M, rows_per_block), int64_t(sm_count) * per_sm))));
    return lc;
  }
  const bool columns = choose_strategy(g) == Strategy::kColumns;
  constexpr int V = canon_vec<in_t>();
  const int64_t inner_stride = g.red.in_strides[g.red.ndim - 1];
  lc.vec = columns && columns_aligned(g, in, V, sizeof(in_t)) ? V : 1;
  // float32 outputs in pairs where each reduced element's row is exactly two outputs (two
  // columns, C = 2 mid dims) and rows start on 16-byte boundaries: canon_kernel<..., 2>, whose
  // warps stage their leaves (64 rows of both outputs, 512 contiguous bytes) with coalesced
  // loads. One output per thread read every line twice, 48% of the read stream; pairs through
  // fold_leaf's 8-byte loads were slower still (NOTES steps 71, 73).
  if (sizeof(in_t) == 4 && canon_stage_fits<Op>(2) && columns && lc.vec == 1 && inner_stride == 2 &&
      columns_aligned(g, in, 2, sizeof(in_t)) && column_pairs_aligned<in_t>(g, in))
    lc.vec = 2;
  // V outputs per thread divide the independent leaf folds (one thread each) by V. When there
  // are fewer of them than one wave of blocks has threads even at one output per thread (mid
  // dims with a few outputs per row: (8, 65536, 4) over dim 1 has 32 outputs of 1024 leaves,
  // 32 blocks with V = 4, 128 with one), take one. A forced block shape (tests) keeps V.
  if (lc.vec > 1 && ov.y == 0 &&
      M * ceil_div(K, kCanonLeaf) <
          int64_t(sm_count) * canon_blocks_per_sm<Op, in_t, out_t>(V) * kCanonThreads)
    lc.vec = 1;
  c.leaves = ceil_div(K, kCanonLeaf);
  // Two adjacent leaves per thread and round for 1- and 2-byte inputs (canon_per) when there
  // are leaves enough for two waves of blocks that way; one output per thread only (four
  // outputs' second accumulators would spill). A forced per = 2 applies where it is built.
  const int64_t wave_threads =
      int64_t(sm_count) * canon_blocks_per_sm<Op, in_t, out_t>(lc.vec) * kCanonThreads;
  c.per = lc.vec > 1 || canon_per<in_t>() == 1 ? 1
          : ov.per > 0                         ? ov.per
          : M * c.leaves >= 2 * wave_threads   ? 2
                                               : 1;
  const int x_leaves = static_cast<int>(
      kCanonThreads / next_pow2(std::min<int64_t>(kCanonThreads, ceil_div(c.leaves, c.per))));
  const int x_columns = columns
                            ? static_cast<int>(std::min<int64_t>(
                                  32, next_pow2(ceil_div(g.kept.sizes[g.kept.ndim - 1], lc.vec))))
                            : 1;
  c.step = inner_stride == 1 || inner_stride == 2 || (lc.vec > 1 && inner_stride == lc.vec)
               ? static_cast<int>(inner_stride)
               : 0;
  // The column staging (canon_kernel<..., kStage = true>) where each reduced element's row is
  // exactly a thread's outputs.
  lc.stage = c.step == lc.vec && canon_stage_fits<Op>(lc.vec);
  c.one = step_digits(g.red, 1);
  const int64_t target = int64_t(sm_count) * canon_blocks_per_sm<Op, in_t, out_t>(lc.vec, c.per);
  // The rest of the configuration for X output lanes: Y, rounds, tiles, then blocks per tile as
  // for the other kernels, and splits of a power-of-two number of rounds (nodes of the tree),
  // about eight per block so that the blocks' shares stay even. Returns the blocks per tile.
  // `final_shape`: the call for the chosen lanes (below), not one of the lane loop's.
  const auto shape = [&](int X, bool final_shape = false) {
    c.X = X;
    c.Y = kCanonThreads / c.X;
    c.rounds = ceil_div(c.leaves, int64_t(c.Y) * c.per);
    c.tiles = ceil_div(M, int64_t(c.X) * lc.vec);
    int64_t blocks = ov.splits > 0 ? ov.splits : choose_splits(c.tiles, c.rounds, 1, target);
    blocks = std::max<int64_t>(1, std::min({blocks, c.rounds, kMaxSplits}));
    const bool countable = c.tiles <= kCounterCapacity;  // split tiles need a counter each
    if (!countable) blocks = 1;
    // One output lane (X = 1): splits of at most 4 rounds, whose merge loads 128-byte runs
    // coalesced and merges them in registers (step 39): full float32 sums 2^30 took 1042 µs
    // with the 16 rounds per split of the rule below, 1022 with 4 (NOTES step 40).
    const bool one_lane = lc.vec == 1 && X == 1;
    // Columns with a wave or more of tiles: each tile cut into splits of a power-of-two run of
    // rounds, one block each, where the smaller units fill the waves enough better to pay for
    // the split nodes' stores and merge, costed at 6% (measured 5.3%: (64, 4096, 1024) over dim
    // 1 at two splits of two rounds per 16-lane tile took 284.6 µs against 270.4 unsplit, the
    // same rounds in whole waves). Unsplit, that shape's 1024 tiles of 4 rounds are 2.59 waves of
    // 396 blocks, 12 rounds for the busiest SM slot; 4096 blocks of one round are 11 rounds:
    // 257.0 µs forced, 260.2 as the lane loop below takes it (8 lanes, 2 splits: the fewest
    // split nodes among the shapes of 11 rounds) (NOTES step 82).
    int64_t fine_rps = 0;
    if (lc.vec > 1 && ov.splits == 0 && ov.rounds == 0 && blocks == 1 && countable &&
        c.tiles >= target) {
      const int64_t gx = std::min(c.tiles, target * kGridCapWaves);
      int64_t best = ceil_div(gx, target) * ceil_div(c.tiles, gx) * c.rounds * 100;
      for (int64_t r = 1; r < c.rounds; r *= 2) {
        const int64_t s = ceil_div(c.rounds, r);
        if (c.tiles * s > (int64_t(1) << 16)) continue;
        const int64_t cost = ceil_div(c.tiles * s, target) * r * 106;
        if (cost < best) {
          best = cost;
          fine_rps = r;
        }
      }
      if (fine_rps > 0) blocks = ceil_div(c.rounds, fine_rps);
    }
    // 16-bit columns (four outputs per thread): one round per split, however the tile is cut.
    // A split of several rounds pushes each round's node onto the round counter in local
    // memory, and those pushes cost more than the split nodes they save: µs eager, bfloat16
    // (32768, 16384) over dim 0 in the same 2 x 256 blocks 264.5 at one round per split
    // against 293.6 at two; (64, 8192, 1024) over dim 1, 32 lanes in 512 blocks, 271.3 at one
    // against 277.8 at 16; float32 columns unchanged at one (NOTES step 152).
    const bool one_round = lc.vec > 1 && sizeof(in_t) == 2 && countable;
    int64_t rps = 1;
    if (ov.rounds > 0 && countable)
      rps = ov.rounds;
    else if (one_round)
      rps = 1;
    else if (fine_rps > 0)
      rps = fine_rps;
    else if (blocks > 1)
      while (rps * 2 * blocks * 8 <= c.rounds && !(one_lane && rps >= 4)) rps *= 2;
    else
      while (rps < c.rounds) rps *= 2;
    // The final merge reads c = S / Y nodes per thread: keep c at most 16 (64 per thread made
    // narrow columns and NHWC statistics 1.7-2x slower in bench run 10, one load at a time;
    // with the nodes in batches and coalesced, 16 made them 1.2x faster than 8: NOTES step
    // 29), or 64 for one output lane, unless a test forces the rounds per split.
    const int64_t merge_per_thread = one_lane ? 64 : 16;
    if (ov.rounds == 0)
      while (rps < c.rounds && ceil_div(c.rounds, rps) > int64_t(c.Y) * merge_per_thread) rps *= 2;
    // 16-bit columns that the merge's limit pushes to two rounds per split take four, once the
    // lanes are chosen (`final_shape`; the lane choice still sees two): two measured 3-5% slower
    // than one or four in the same lanes (µs eager, rounds 1 / 2 / 4: bfloat16 (2097152, 64)
    // over dim 0, 32 leaf lanes, 96.9 / 100.2 / 96.0; (4194304, 32), 64 leaf lanes, 91.3 / 95.7
    // / 90.0; (1048576, 128), 32 leaf lanes, 107.5 / 108.5 / 104.7; NOTES step 155).
    if (final_shape && one_round && ov.rounds == 0 && rps == 2 && c.rounds > 2) rps = 4;
    constexpr int64_t kMaxRounds = int64_t(1) << (kCanonLevels - 1);
    rps = std::min(rps, kMaxRounds);
    c.splits = static_cast<int>(std::min<int64_t>(ceil_div(c.rounds, rps), INT32_MAX));
    c.rounds_per_split = rps;
    // Refused (lc.ok): split tiles without a counter each, or a merge of more than 2^30 nodes
    // per thread. Both need over 2^46 elements read (more than 2^20 rounds per output and
    // over 4096 tiles), which only an expanded view can describe.
    const int64_t merge = next_pow2(ceil_div(c.splits, c.Y));
    lc.ok = (c.splits == 1 || countable) && merge <= (int64_t(1) << 30);
    c.merge_per_thread = static_cast<int>(std::min<int64_t>(merge, int64_t(1) << 30));
    blocks = std::min<int64_t>(blocks, c.splits);
    // Columns: the fewest blocks that keep the busiest block's splits (the tile's blocks take
    // them in turn). Narrow columns (1048576, 32) as 2 x 198 blocks of 1-2 splits took 51.9 µs,
    // as 2 x 128 of 2 splits 50.8; (262144, 128) 4 x 99 47.6, 4 x 64 46.9 (NOTES step 54).
    if (lc.vec > 1 && ov.splits == 0) blocks = ceil_div(c.splits, ceil_div(c.splits, blocks));
    return blocks;
  };
  // The grid for the configuration shape() left, given its blocks per tile: split tiles get one
  // block along x each and `blocks` along y; unsplit tiles are strided over at most
  // kGridCapWaves waves of blocks.
  const auto grid_of = [&](int64_t blocks) {
    return c.splits > 1 ? dim3(static_cast<unsigned>(c.tiles), static_cast<unsigned>(blocks))
                        : dim3(static_cast<unsigned>(std::min(c.tiles, target * kGridCapWaves)), 1);
  };
  // The configuration for X = x (shape(x), left in c) and its estimated makespan in rounds per
  // block slot: split tiles' blocks listed in launch order on the first free slot (`listed`) or
  // as whole waves of the busiest block (split_makespan); unsplit tiles as whole waves.
  const auto makespan = [&](int x, bool listed) {
    const dim3 grid = grid_of(shape(x));
    return c.splits > 1
               ? split_makespan(grid.x, grid.y, c.splits, c.rounds_per_split, target, listed)
               : ceil_div(grid.x, target) * ceil_div(c.tiles, grid.x) * c.rounds;
  };
  // Output lanes: as many as an output has leaves per round allow (x_leaves), and column layouts
  // at least their outputs side by side, up to 32 (x_columns). Taking at most the leaves also
  // for columns keeps every lane busy where an output has few leaves: (1024, 1024, 2) over dim 1
  // (16 leaves per output) ran 2 output lanes x 128 leaf lanes, 1/8 of them busy, 22.4 µs;
  // 16 x 16 took 12.8 µs (NOTES step 24).
  int X = ov.y > 0 ? kCanonThreads / ov.y : std::max(x_leaves, x_columns);
  // Misaligned 16-bit leaves of several reduced dims (misaligned NCHW statistics): the shifted
  // staging (fold_leaves_shifted) needs the 32 / X lanes of each output in a warp, c.per
  // leaves each, to hold leaves that follow each other in memory, so enough output lanes that
  // those leaves stay inside one run of the innermost reduced dim. (64, 256, 32, 32) over (0, 2,
  // 3) from x[1:] (runs of 16 leaves) took 0.70x the aligned time with one output lane (element
  // staging); an edit of the kernel's check instead moved the aligned kernels (NOTES step 66).
  // Only where the outputs fill those lanes (a non-contiguous full sum, M = 1, would leave
  // most of them idle), and where every memory run starts the same number of elements past a
  // 16-byte boundary (the outer reduced and the kept strides multiples of 8 elements), which
  // the shifted staging also needs: otherwise the warps stage element by element whatever X.
  const bool shifted = ov.y == 0 && sizeof(in_t) == 2 && lc.vec == 1 && c.step == 1 &&
                       g.red.ndim >= 2 && (reinterpret_cast<uintptr_t>(in) & 15) != 0 &&
                       g.red.sizes[g.red.ndim - 1] % (int64_t(kCanonLeaf) * c.per) == 0 &&
                       outer_strides_whole_vectors<in_t>(g);
  if (shifted) {
    const int64_t run_leaves = g.red.sizes[g.red.ndim - 1] / kCanonLeaf;
    const int64_t lanes = (run_leaves & -run_leaves) / c.per;  // >= 1
    if (lanes < 32 && M >= 32 / lanes) X = std::max<int>(X, static_cast<int>(32 / lanes));
  }
  // Runs of the innermost reduced dim shorter than 1 KB (NCHW statistics of 5 x 5 .. 14 x 14
  // maps) and fewer than 8 output lanes: 32 (at most the outputs), whose leaves at one reduced
  // position are the runs of 32 neighbouring channels, one stretch of memory per block and
  // phase. With 1-4 lanes a block's reads are runs of 1-4 channels a whole image apart:
  // (128, 2048, 7, 7) float32 took 66.5 µs with 2 output lanes against 33.4 with 32 (torch
  // 48.5), bfloat16 (4 lanes) 62.1 against 27.3; (256, 256, 5, 5) 23.6 against 12.2;
  // (64, 1024, 14, 14) 35.6 with one against 32.2. Not from 16: (16, 2048, 7, 7), 13 leaves per
  // output, took 12.7 µs as 16 lanes of one round against 14.2 as 32 of two splits (NOTES step
  // 138).
  if (ov.y == 0 && !shifted && lc.vec == 1 && c.step == 1 && g.red.ndim >= 2 && X < 8 &&
      g.red.sizes[g.red.ndim - 1] * int64_t(sizeof(in_t)) < 1024) {
    int x = 32;
    while (x > 1 && x > M) x /= 2;
    X = std::max(X, x);
  }
  // One output per thread over several reduced dims (NCHW statistics over (0, 2, 3)): with one
  // output lane, outputs of one to two waves of blocks, each of a few rounds, leave the last
  // wave partly empty. (32, 512, 28, 28): 512 tiles of 2 rounds on 396 slots, 4 rounds for the
  // busiest slot, 94.1 µs; 32 lanes, 16 tiles x 49 one-round splits, 2 rounds: 46.9 µs
  // (bfloat16 89.0 -> 42.2). Take the X of least makespan (whole waves of the busiest block:
  // no per-call list) where it is at most 3/4 of one lane's; elsewhere the lanes measured within
  // a few percent of each other over six NCHW shapes (NOTES step 130).
  if (ov.y == 0 && lc.vec == 1 && X == 1 && c.step == 1 && g.red.ndim >= 2) {
    const int64_t one = makespan(1, /*listed=*/false);
    int64_t best = one;
    int best_x = 1;
    for (int x = 2; x <= 32 && x / 2 < M; x *= 2) {
      const int64_t s = makespan(x, /*listed=*/false);
      if (s < best) {
        best = s;
        best_x = x;
      }
    }
    if (4 * best <= 3 * one) X = best_x;
  }
  if (ov.y == 0 && lc.vec > 1) {
    // Columns read 16 bytes per output lane: fewer lanes (down to 8: 128-byte segments) give
    // more tiles and fewer splits per tile. Take the X whose estimated makespan is least, then
    // the fewest merged nodes per thread, then rows read in whole 128-byte segments (16-bit
    // columns read 8 bytes per lane: 16 lanes), then the fewest split nodes written (each
    // merged once more): narrow columns (262144, 128) and NHWC statistics 1.25-1.34x faster
    // with 8 lanes than with 32, columns (16384, 16384) 1.16x slower (512 tiles of 8 rounds: 1.3
    // waves) (NOTES step 31).
    // Four lanes (64-byte segments) only when eight already cover every column: (1048576, 32)
    // 57.1 µs with 4 against 60.5 with 8 (two tiles, each merging 4 nodes per thread instead
    // of one merging 16), while narrow (262144, 128) took 59.1 with 4 against 54.2 with 8
    // (NOTES step 34).
    // The makespan: for 4- and 8-byte inputs, that of split tiles' blocks started in launch
    // order (x fastest), each on the first free of `target` slots, so that blocks with fewer
    // splits fill the second wave's gaps; otherwise the busiest block's rounds times the waves
    // of blocks. Columns (16384, 16384) with 16 lanes took 262.4 µs (768 blocks of 5-6 splits:
    // 11 rounds listed, 12 as whole waves) against 268.2 with 32 (384 blocks of 10-11); but
    // float16 (16384, 16384) 158.0 with 16 lanes against 154.6 with 32 (one wave), hence whole
    // waves for 16-bit inputs. (4096, 4096), one wave at every X: 27.8 µs with 8 lanes x 2 splits
    // against 28.3 with 32 x 8; bfloat16 21.7 with 16 x 4, 21.9 with 32 x 8, 23.5 with 8 x 2
    // (NOTES step 54).
    const int fewest = x_columns <= 8 ? 4 : 8;
    const auto whole_segments = [&](int x) { return x * lc.vec * int(sizeof(in_t)) >= 128; };
    // Least first: the makespan, the merged nodes per thread, not reading whole segments, for
    // 4- and 8-byte inputs the blocks launched (each pays its prologue, its split nodes'
    // arrival and its share of the merge: columns (16384, 16384) as 512 x 8 blocks of one round
    // took 257.7 / 246.8 µs eager / graph, as 256 x 3 of 5-6 rounds, the same 11 rounds listed,
    // 255.5 / 244.1; NOTES step 148), the split nodes written.
    const bool listed = sizeof(in_t) >= 4;
    // 16-bit columns (one round per split, shape) count up to 4 merged nodes per thread as
    // one, so that whole segments decide between such lanes: µs eager, 16 lanes against 8,
    // bfloat16 (32768, 16384) over dim 0 (2 against 1 nodes per thread) 268.4 against 346.5,
    // (32768, 4096) 79.9 against 86.6, (65536, 1024) (4 against 1) 48.5 against 51.0; but
    // (100000, 256) (8 against 2) 29.7 against 26.9, (262144, 128) (16 against 4) 36.9
    // against 33.4 (NOTES step 152).
    const int few_merged = sizeof(in_t) == 2 ? 4 : 1;
    std::tuple<int64_t, int, bool, int, int64_t, int64_t> best_key{};
    int best_x = X;
    bool any = false;
    for (int x = X; x >= std::max(fewest, x_leaves); x /= 2) {
      const int64_t cost = makespan(x, listed);
      const int64_t nodes = c.splits > 1 ? c.tiles * c.X * c.splits : 0;
      const dim3 grid = grid_of(shape(x));
      const int64_t blocks = listed ? int64_t(grid.x) * grid.y : 0;
      const auto key = std::make_tuple(cost, std::max(c.merge_per_thread, few_merged),
                                       !whole_segments(x), c.merge_per_thread, blocks, nodes);
      if (!any || key < best_key) {
        best_key = key;
        best_x = x;
        any = true;
      }
    }
    X = best_x;
  }
  lc.block = dim3(kCanonThreads);
  lc.grid = grid_of(shape(X, /*final_shape=*/true));
  // Interleaved leaves at one output per thread (fold_leaves_interleaved): where a tile's X = 4
  // .. 32 output lanes are the innermost kept dim, of that size and stride 1, and the innermost
  // reduced stride is X (mid dims (A, B, C) over B, C = X, with too few leaves for the column
  // kernels' C outputs per thread: (8, 65536, 4), (64, 4096, 8)) from an aligned base, each
  // warp's leaves are one run, which it stages whole (canon_kernel<..., kInter = true>; its
  // warps check the run, and fold the other leaves element by element). Output lane 1 starts
  // one element past lane 0, so the aligned staging's all-lanes test never takes these leaves.
  if (interleaves<in_t>() && lc.vec == 1 && c.per == 1 && c.step == 0 && c.X >= 4 && c.X <= 32 &&
      inner_stride == c.X && reinterpret_cast<uintptr_t>(in) % 16 == 0 && g.kept.ndim >= 1 &&
      g.kept.sizes[g.kept.ndim - 1] == c.X && g.kept.in_strides[g.kept.ndim - 1] == 1) {
    c.step = c.X;
    lc.inter = true;
  }
  // The latency kernel (kLat: one memory latency per leaf, the splits merged in a cluster) for
  // one output per thread and one leaf per round, where every block has an SM of its own.
  // Automatic: for reduced elements in runs (rows, full sums), one output lane and the fewest
  // leaf lanes (from a warp) that give every output at most one cluster of one-round splits;
  // else the planned shape when its splits fit a cluster. Mid dims (8, 65536, 4) over dim 1,
  // whose leaves are strided, took 25.4 µs as one output lane against 14.7 planned; (64, 65536)
  // over dim 1 in clusters at two blocks per SM 15.9 against 15.5 (NOTES step 51). Not without
  // splits: mid dims (1024, 1024, 2) over dim 1, 128 blocks, 8.0 µs in a CUDA graph against 7.8
  // (NOTES step 110). A forced lat = 1 takes the forced or planned shape wherever its splits
  // fit.
  const bool lat_auto = ov.lat < 0 && !forced;
  if (clusters && (lat_auto || ov.lat > 0) && lc.vec == 1 && c.per == 1) {
    int most = canon_max_cluster<Op, in_t, out_t>();
    if constexpr (interleaves<in_t>())
      if (lc.inter) most = std::min(most, canon_max_cluster<Op, in_t, out_t, true>());
    for (int y = 32; lat_auto && c.step == 1 && !lc.lat && y <= kCanonThreads; y *= 2) {
      const int64_t rounds = ceil_div(c.leaves, y);
      if (rounds > most || M * rounds > sm_count) continue;
      c.X = 1;
      c.Y = y;
      c.rounds = rounds;
      c.tiles = M;
      c.splits = static_cast<int>(rounds);
      c.rounds_per_split = 1;
      c.merge_per_thread = 1;
      lc.block = dim3(static_cast<unsigned>(y));
      lc.grid = dim3(static_cast<unsigned>(M), static_cast<unsigned>(rounds));
      lc.lat = true;
    }
    if (!lc.lat)
      lc.lat = c.splits <= most && c.splits <= c.Y && c.splits * c.X <= kClusterSlots &&
               lc.grid.y == unsigned(c.splits) &&
               (ov.lat > 0 || (c.splits > 1 && int64_t(lc.grid.x) * lc.grid.y <= sm_count));
  }
  const bool global_merge = c.splits > 1 && !lc.lat;
  lc.partials = global_merge ? c.tiles * c.X * lc.vec * c.splits : 0;
  lc.counters = global_merge ? c.tiles : 0;
  return lc;
}

// The latency kernel kKernel (canon_kernel<..., kLat = true>) for the plan: the splits of a tile
// in one cluster.
template <auto kKernel, class in_t, class out_t, class acc_t>
void launch_latency(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
                    acc_t* partials, unsigned* counters, cudaStream_t stream) {
  if (lc.cfg.splits > 1)
    launch_cluster<kKernel>(lc.grid, lc.block, dim3(1, static_cast<unsigned>(lc.cfg.splits), 1), 0,
                            stream, in, out, g, lc.cfg, partials, counters);
  else
    kKernel<<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
}

// canon_small_kernel at kL leaves per thread, one block per output (lc.chunk = 0) or chunks
// merged through partials. One block per output at two leaves per thread takes the kWhole
// instantiation, without the chunks' merge, except float16 (folded in any order) (NOTES step
// 151, µs eager against the chunk kernel: bfloat16 rows (16384, 32768) 257.2 against 290.3,
// float8 rows 240.8 against 244.5, float16 250.4 against 248.5; at one leaf per thread float32
// rows (16384, 16384) 266.3 against 242.5); lc.whole forces it off or on.
template <class Op, class in_t, class out_t, int kL, bool kUnaligned>
void launch_small(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
                  typename Op::acc_t* partials, unsigned* counters, size_t stage,
                  cudaStream_t stream) {
  constexpr bool kWholeAuto = kL == 2 && !sums_exactly_any_order<Op, in_t>();
  if (lc.chunk == 0 && (lc.whole < 0 ? kWholeAuto : lc.whole == 1))
    canon_small_kernel<Op, in_t, out_t, kL, kUnaligned, false, true>
        <<<lc.grid, lc.block, stage, stream>>>(in, out, g, partials, counters, 0, 0);
  else
    canon_small_kernel<Op, in_t, out_t, kL, kUnaligned><<<lc.grid, lc.block, stage, stream>>>(
        in, out, g, partials, counters, lc.chunk, lc.cfg.merge_per_thread);
}

template <class Op, class in_t, class out_t>
void run_canon_launch(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
                      typename Op::acc_t* partials, unsigned* counters, cudaStream_t stream) {
  if (lc.packed) {
    run_packed<Op, vec_width<in_t>()>(g, in, out, lc.packed_vecs, lc.grid, lc.block, stream);
    return;
  }
  if (lc.pair == 2) {
    pair_rows_kernel<Op, in_t, out_t, 2><<<lc.grid, lc.block, 0, stream>>>(in, out, g);
    return;
  }
  if (lc.pair == 4) {
    pair_rows_kernel<Op, in_t, out_t, 4><<<lc.grid, lc.block, 0, stream>>>(in, out, g);
    return;
  }
  if (lc.small) {  // dynamic shared memory: the stage, kSmallVecs vectors per warp
    using Slot = Vec<in_t, vec_width<in_t>()>;
    const size_t stage = size_t(lc.block.x / 32) * LeafStage<in_t>::kSmallVecs * sizeof(Slot);
    const int merge = lc.cfg.merge_per_thread;
    constexpr int kL = canon_per<in_t>();  // leaves per thread of chunks and long small outputs
    // Two leaves per thread where the plan gave them (chunk_per for chunks, small_block's
    // small_leaves_per_thread for one block per output); several chunks per block where
    // chunk_loop gave them (chunks of one leaf per thread only).
    const bool two =
        lc.chunk > 0 ? lc.cfg.per == 2 : small_leaves_per_thread<in_t>(g.reduce_len) == 2;
    const bool looped = lc.chunk > 0 && int64_t(lc.grid.x) < lc.cfg.splits;
    if constexpr (small_unaligned<Op, in_t, kL>()) {
      // chunk_rows or small_block from a base off a boundary: every run one shift. 16-bit
      // inputs as aligned ones, 8-bit ones two leaves per thread, float32 one.
      if (reinterpret_cast<uintptr_t>(in) % 16 != 0) {
        if constexpr (small_unaligned<Op, in_t, 1>() && kL == 2) {
          if (looped) {
            canon_small_loop_kernel<Op, in_t, out_t, true><<<lc.grid, lc.block, stage, stream>>>(
                in, out, g, partials, counters, lc.chunk, lc.cfg.splits, merge);
            return;
          }
          if (!two) {
            launch_small<Op, in_t, out_t, 1, true>(lc, g, in, out, partials, counters, stage,
                                                   stream);
            return;
          }
        }
        launch_small<Op, in_t, out_t, kL, true>(lc, g, in, out, partials, counters, stage, stream);
        return;
      }
    }
    if constexpr (chunks_loop<in_t>()) {
      if (lc.cluster) {  // chunk_cluster: an output's chunks merged in a cluster
        launch_cluster<canon_small_kernel<Op, in_t, out_t, 1, false, true>>(
            lc.grid, lc.block, dim3(lc.grid.x, 1, 1), stage, stream, in, out, g, partials, counters,
            lc.chunk, merge);
        return;
      }
      if (looped) {
        canon_small_loop_kernel<Op, in_t, out_t><<<lc.grid, lc.block, stage, stream>>>(
            in, out, g, partials, counters, lc.chunk, lc.cfg.splits, merge);
        return;
      }
    }
    if constexpr (kL == 2) {
      if (two) {
        launch_small<Op, in_t, out_t, 2, false>(lc, g, in, out, partials, counters, stage, stream);
        return;
      }
    }
    launch_small<Op, in_t, out_t, 1, false>(lc, g, in, out, partials, counters, stage, stream);
    return;
  }
  if (lc.lat) {
    if constexpr (interleaves<in_t>()) {
      if (lc.inter) {
        launch_latency<canon_kernel<Op, in_t, out_t, 1, 1, true, false, true>>(
            lc, g, in, out, partials, counters, stream);
        return;
      }
    }
    launch_latency<canon_kernel<Op, in_t, out_t, 1, 1, true>>(lc, g, in, out, partials, counters,
                                                              stream);
    return;
  }
  if constexpr (interleaves<in_t>()) {
    if (lc.inter) {
      canon_kernel<Op, in_t, out_t, 1, 1, false, false, true>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
      return;
    }
  }
  constexpr int V = canon_vec<in_t>();
  if constexpr (V != 2 && sizeof(in_t) == 4 && canon_stage_fits<Op>(2)) {
    if (lc.vec == 2) {  // float32 pairs (always staged where the layout allows)
      canon_kernel<Op, in_t, out_t, 2, 1, false, true>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
      return;
    }
  }
  if constexpr (canon_stage_fits<Op>(V)) {
    if (lc.vec > 1 && lc.stage) {
      canon_kernel<Op, in_t, out_t, V, 1, false, true>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
      return;
    }
  }
  if (lc.vec > 1)
    canon_kernel<Op, in_t, out_t, V>
        <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
  else if (lc.cfg.per > 1)
    canon_kernel<Op, in_t, out_t, 1, canon_per<in_t>()>
        <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
  else
    canon_kernel<Op, in_t, out_t, 1>
        <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
}

}  // namespace treduce
