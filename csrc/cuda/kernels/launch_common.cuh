// launch_common.cuh: what both planners share: grid sizing (occupancy, splits that fill whole
// waves, cluster launches), the layout predicates that choose a kernel family, and the launch
// geometry. Raw CUDA, nothing from torch.
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
#include <vector>

#include "../../geometry.h"
#include "common.cuh"

namespace treduce {

constexpr int64_t kGridCapWaves = 4;  // grid-stride beyond this many waves of blocks

constexpr int64_t kCounterCapacity = 4096;  // counters the caller must provide at most

constexpr int64_t kMaxSplits = 65535;  // gridDim.y limit

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Inputs of fewer than this many bytes are read with evict-first 16-byte loads (Geometry::
// evict_first, load_in). After a write that leaves L2 dirty (do_bench's flush, or the kernel
// that produced the input), a read-only stream of 64 / 128 MB took 26.2 / 42.3 µs with plain
// loads and 23.2 / 39.1 evict-first; 256 MB the same (72.6 / 72.2), and short f32 rows of 256 MB
// lost 6%; 1 GB 248 against 260. Plain loads below 16 MB measured no faster.
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

// Whether every kept stride is a whole number of 16-byte vectors (vec_width elements): then every
// output's elements start as far past a 16-byte boundary as the base does.
template <class in_t>
bool kept_strides_whole_vectors(const Geometry& g) {
  for (int d = 0; d < g.kept.ndim; ++d)
    if (g.kept.in_strides[d] % vec_width<in_t>() != 0) return false;
  return true;
}

// Whether every reduced stride but the innermost and every kept stride is a whole number of
// 16-byte vectors: then every run of the innermost reduced dim starts the same number of
// elements past a 16-byte boundary as the base does.
template <class in_t>
bool outer_strides_whole_vectors(const Geometry& g) {
  for (int d = 0; d + 1 < g.red.ndim; ++d)
    if (g.red.in_strides[d] % vec_width<in_t>() != 0) return false;
  return kept_strides_whole_vectors<in_t>(g);
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

// Whether each output's K elements are one run at stride 2 (every other element, x[..., ::2]) of
// elements of at most 4 bytes: the row kernel then reads the run's span with 16-byte vectors and
// folds half of each (kLoadStepTwo), where element by element a warp's load took one instruction
// per 32 elements (amax bfloat16 (16384, 512)[:, ::2]: 34.6 µs, torch 22.1, Inductor 19.6; H100
// sweep). Rows may start anywhere: each finds its own boundary and parity.
template <class in_t>
constexpr bool kStepTwoLoads = sizeof(in_t) <= 4;  // (8-byte ones: one element a vector)
template <class in_t>
bool step_two_rows(const Geometry& g) {
  return kStepTwoLoads<in_t> && g.red.ndim == 1 && g.red.in_strides[0] == 2;
}

// ... that start on a 16-byte boundary: one_run_rows and an aligned base.
template <class in_t>
bool aligned_rows(const Geometry& g, const void* in) {
  return one_run_rows<in_t>(g) && reinterpret_cast<uintptr_t>(in) % 16 == 0;
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

}  // namespace treduce
