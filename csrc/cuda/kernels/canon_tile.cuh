// canon_tile.cuh: the canonical order's kernel for reduced blocks stored transposed
// (canon_tile_kernel; its route's predicate, tile_stage, is in canon_config.cuh). Raw CUDA,
// nothing from torch.
//
// A reduced block stored transposed (reduced_block_transposed) is walked element by element by
// the other kernels, one trip to memory per element a lane. Here one block per output reads the
// block in memory order (coalesced), writes each element to its logical position in shared
// memory, and folds the leaves from there: the same leaves and tree as canon_small_kernel, so the
// same bits.
#pragma once
#include <atomic>

#include "canon_small.cuh"
#include "plan_canon_rules.cuh"

namespace treduce {

// Loads in flight per thread while staging.
constexpr int kTileBatch = 8;
// Shared-memory loads issued ahead of a leaf's chain of additions.
constexpr int kTileFoldBatch = 8;

// Stages the K elements at p in the tile: the block's threads walk `map` (memory order) by steps
// of their count with a Walker of kD dims, kTileBatch loads in flight each, and store every
// element at its logical position k, leaf k / kCanonLeaf padded to kLeafSlots elements.
template <int kD, int kLeafSlots, class in_t>
__device__ __forceinline__ void stage_tile(const in_t* __restrict__ p, in_t* tile,
                                           const TileMap& map, int K) {
  const int tid = threadIdx.x;
  const int threads = blockDim.x;
  TileWalkerOf<kD> w(map, tid);
  for (int i0 = tid; i0 < K; i0 += kTileBatch * threads) {
    in_t x[kTileBatch];
    int at[kTileBatch];
#pragma unroll
    for (int b = 0; b < kTileBatch; ++b) {
      at[b] = -1;
      if (i0 + b * threads < K) {
        x[b] = p[w.offset(map)];
        const unsigned k = w.position(map);  // leaf k / kCanonLeaf (a shift, k unsigned)
        at[b] = static_cast<int>(k + k / kCanonLeaf * (kLeafSlots - kCanonLeaf));
        w.advance(map);
      }
    }
#pragma unroll
    for (int b = 0; b < kTileBatch; ++b)
      if (at[b] >= 0) tile[at[b]] = x[b];
  }
}

// Vector loads in flight per thread while staging runs of vectors.
constexpr int kTileVecBatch = 4;

// stage_tile for blocks in runs of whole 16-byte vectors (geometry.h: tile_map_runs), the block's
// base 16-byte aligned: the threads walk `map` (tile_vector_map: the innermost dim in vectors) by
// steps of their count, one 16-byte load and one walk step for V elements, and store element e of
// the vector at logical position k to k + e * spread. The H x W maps stored transposed staged
// element by element were bound by the walk's instructions (ncu, H100: 71% issue-busy, 41% of
// DRAM; 14.07 -> 9.13 M warp instructions from the four-dim walk to the two-dim one).
template <int kD, int kLeafSlots, class in_t>
__device__ __forceinline__ void stage_tile_runs(const in_t* __restrict__ p, in_t* tile,
                                                const TileMap& map, int nvec, int spread, bool ef) {
  constexpr int V = vec_width<in_t>();
  using VecT = Vec<in_t, V>;
  const int tid = threadIdx.x;
  const int threads = blockDim.x;
  const uint64_t pol = load_policy<VecT>(ef);
  TileWalkerOf<kD> w(map, tid);
  for (int i0 = tid; i0 < nvec; i0 += kTileVecBatch * threads) {
    VecT x[kTileVecBatch];
    int at[kTileVecBatch];
#pragma unroll
    for (int b = 0; b < kTileVecBatch; ++b) {
      at[b] = -1;
      if (i0 + b * threads < nvec) {
        x[b] = load_in(reinterpret_cast<const VecT*>(p + w.offset(map)), pol);
        at[b] = w.position(map);
        w.advance(map);
      }
    }
#pragma unroll
    for (int b = 0; b < kTileVecBatch; ++b) {
      if (at[b] < 0) continue;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const unsigned k = static_cast<unsigned>(at[b] + e * spread);  // leaf k / kCanonLeaf
        tile[k + k / kCanonLeaf * (kLeafSlots - kCanonLeaf)] = x[b].v[e];
      }
    }
  }
}

// One block per output o (blockIdx.x) of K = g.reduce_len elements, whose reduced dims `map`
// walks in memory order (geometry.h: tile_map, by the block's thread count): stage_tile (over
// two dims where the map has no more: the transposed H x W maps) puts each element at its
// logical position in the dynamic shared memory, or, where spread > 0, stage_tile_runs puts each
// 16-byte vector's elements there (`map` is then tile_vector_map's, and spread the logical
// distance between a vector's neighbours); then thread t < T (small_threads at kL leaves
// per thread) folds leaves kL t .. kL t + kL - 1 in order and merges them, and the perfect tree
// over the T lanes (tree_over_block) gives thread 0 the output: canon_small_node's additions.
template <class Op, class in_t, class out_t, int kL>
__global__ void __launch_bounds__(kCanonThreads)
    canon_tile_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                      const TileMap map, int T, int spread) {
  using acc_t = typename Op::acc_t;
  constexpr int kLeafSlots = kCanonLeaf + tile_pad(sizeof(in_t));
  __shared__ acc_t sm[kCanonThreads / 32];  // tree_over_block: a node a warp
  extern __shared__ __align__(16) unsigned char tile_raw[];
  in_t* const tile = reinterpret_cast<in_t*>(tile_raw);
  const int64_t o = blockIdx.x;
  const int K = static_cast<int>(g.reduce_len);  // tile_stage: one block's leaves
  const in_t* __restrict__ p = in + g.kept.in_offset(o);
  const int tid = threadIdx.x;
  if (spread > 0) {
    const int nvec = K / vec_width<in_t>();
    if (tile_map_two_dims(map))
      stage_tile_runs<2, kLeafSlots>(p, tile, map, nvec, spread, g.evict_first);
    else
      stage_tile_runs<kTileDims, kLeafSlots>(p, tile, map, nvec, spread, g.evict_first);
  } else if (tile_map_two_dims(map)) {
    stage_tile<2, kLeafSlots>(p, tile, map, K);
  } else {
    stage_tile<kTileDims, kLeafSlots>(p, tile, map, K);
  }
  __syncthreads();
  acc_t a = Op::identity();
  if (tid < T) {
    acc_t b[kL];
#pragma unroll
    for (int l = 0; l < kL; ++l) {
      b[l] = Op::identity();
      const int r = (tid * kL + l) * kCanonLeaf;
      const int n = r >= K ? 0 : (K - r < kCanonLeaf ? K - r : kCanonLeaf);
      const in_t* leaf = tile + (tid * kL + l) * kLeafSlots;
      int j = 0;
      for (; j + kTileFoldBatch <= n; j += kTileFoldBatch) {  // loads ahead of the chain
        in_t v[kTileFoldBatch];
#pragma unroll
        for (int u = 0; u < kTileFoldBatch; ++u) v[u] = leaf[j + u];
#pragma unroll
        for (int u = 0; u < kTileFoldBatch; ++u) b[l] = fold<Op>(b[l], v[u]);
      }
      for (; j < n; ++j) b[l] = fold<Op>(b[l], leaf[j]);
    }
    a = b[0];
#pragma unroll
    for (int l = 1; l < kL; ++l) a = Op::combine(a, b[l]);
  }
  a = tree_over_block<Op>(a, T, tid, sm);
  if (tid == 0) out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(a, K, g.num_outputs));
}

// Launches kKernel (a canon_tile_kernel) with `bytes` of dynamic shared memory, letting it use
// kTileStageMaxBytes first (once per kernel and device): its static and dynamic shared memory
// together may pass the default 48 KB below kTileStageMaxBytes.
template <auto kKernel, class... Args>
void launch_tile(dim3 grid, dim3 block, size_t bytes, cudaStream_t stream, Args... args) {
  static std::atomic<bool> allowed[64] = {};  // calls may come from several host threads
  int dev = 0;
  if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < 64 && !allowed[dev].load())
    allowed[dev].store(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(kTileStageMaxBytes)) == cudaSuccess);
  kKernel<<<grid, block, bytes, stream>>>(args...);
}

// canon_tile_kernel for the plan's outputs (route_tile took them: lc.grid, lc.block):
// small_threads lanes at small_leaves_per_thread leaves each; blocks in runs of whole vectors
// from aligned bases staged a vector at a time.
template <class Op, class in_t, class out_t>
void run_tile(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
              cudaStream_t stream) {
  constexpr int V = vec_width<in_t>();
  const int64_t K = g.reduce_len;
  const int per = small_leaves_per_thread<in_t>(K);
  const int T = small_threads(K, per);
  const int32_t threads = static_cast<int32_t>(lc.block.x);
  const TileMap elems = tile_map(g.red, threads);
  // stage_tile_runs' loads: every output's block on a 16-byte boundary
  const bool runs = tile_map_runs(elems, V) && reinterpret_cast<uintptr_t>(in) % 16 == 0 &&
                    kept_strides_whole_vectors<in_t>(g);
  const TileMap map = runs ? tile_vector_map(elems, V, threads) : elems;
  const int spread = runs ? elems.out_strides[kTileDims - 1] : 0;
  const size_t bytes = static_cast<size_t>(tile_stage_bytes(K, sizeof(in_t)));
  const dim3 grid = lc.grid, block = lc.block;
  if constexpr (canon_per<in_t>() == 2) {
    if (per == 2) {
      launch_tile<canon_tile_kernel<Op, in_t, out_t, 2>>(grid, block, bytes, stream, in, out, g,
                                                         map, T, spread);
      return;
    }
  }
  launch_tile<canon_tile_kernel<Op, in_t, out_t, 1>>(grid, block, bytes, stream, in, out, g, map, T,
                                                     spread);
}

}  // namespace treduce
