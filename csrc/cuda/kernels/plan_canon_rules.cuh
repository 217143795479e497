// plan_canon_rules.cuh: the canonical planner's configuration (CanonLaunch, the test-only
// CanonOverride) and its rules for the short-row and chunk kernels (canon_small.cuh): which
// outputs they take, threads, leaves and chunks per block, and cluster merges. Each rule says
// what it was measured against on the H200. Raw CUDA, nothing from torch.
//
#pragma once
#include "canon_kernel.cuh"
#include "canon_small.cuh"
#include "plan_plain.cuh"
#include "tuning.cuh"

namespace treduce {

// Whether canon_small_kernel's chunks take the layout: aligned_rows, or one_run_rows from any base
// for the inputs whose chunks it folds off a boundary (fold_small_unaligned: stages_unaligned).
template <class Op, class in_t>
bool chunk_rows(const Geometry& g, const void* in) {
  return stages_unaligned<Op, in_t>() ? one_run_rows<in_t>(g) : aligned_rows<in_t>(g, in);
}

struct CanonLaunch {
  CanonConfig cfg{};
  int pair = 0;             // rows of 2 or 4 aligned 16-byte vectors: pair_rows_kernel<..., pair>
  bool packed = false;      // rows of K = 2, 4, 8, 16 inside 16-byte vectors: packed_rows_kernel,
  int64_t packed_vecs = 0;  // whose in-order fold of a whole row is the canonical order (one leaf)
  int vec = 1;              // outputs per thread (canon_vec() or 1)
  bool lat = false;         // canon_kernel<..., kLat = true>: clusters of cfg.splits blocks along y
  bool tile = false;        // canon_tile_kernel: a reduced block staged, one per output
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
  if constexpr (sizeof(in_t) == 4 && canon_stage_fits<Op>(2)) {
    if (vec == 2) {  // float32 pairs (choose_vec, run_tiles): only the staged kernel
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
//   small_leaves_per_thread leaves per thread, as aligned ones (16-bit inputs:
//   µs against two per thread: bfloat16 rows (16384, 16384) + 1 145.8 -> 133.1, (65536,
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
// `chunks` chunks each, GPU times with the L2 dirtied as in the
// bench, µs). Full sums from 32 chunks: float32 (2^19 10.2 -> 8.5, 2^20 10.3 -> 9.5, 2^23 19.6 ->
// 16.9, 2^28 265.2 -> 257.9, 2^30 1011 -> 991; 16 chunks, 2^18, 7.6 -> 8.5) and 16-bit inputs
// (bfloat16 2^20 9.8 / 5.8 -> 8.2 / 4.4 eager / in a CUDA graph, 2^21 10.5 / 6.2 -> 9.1 / 4.7 in
// chunks of 128 threads; before those, 64 chunks of 256 threads, 2^21, 10.0 -> 10.3).
// Rows: float32 and 16-bit from 128 chunks where there are at most half as many outputs as
// SMs ((64, 65536) float32 13.4 -> 12.7, bfloat16 11.3 -> 11.0; (32, 2^20) float32 47.7 ->
// 43.9; but (8, 131072), 64 and 32 chunks, 8.4 -> 8.9 and 7.8 -> 9.0), and every dtype from 16
// chunks per SM (rows (1024, 262144) float32 267.2 -> 250.7; bfloat16 (256, 65536), 512
// chunks, 19.4 -> 20.5). float64 (2^24-2^26 equal) and 1-byte inputs only from 16 per SM.
template <class in_t>
bool chunks_auto(int64_t M, int64_t chunks, int sm_count) {
  constexpr bool measured = sizeof(in_t) == 4 || sizeof(in_t) == 2;
  const int64_t total = M * chunks;
  if (total >= tuning::kChunksPerSm * sm_count) return true;
  if (!measured) return false;
  if (M == 1) return total >= tuning::kChunksFullSum;
  return 2 * M <= sm_count && total >= tuning::kChunksRows;
}

// Inputs whose aligned chunks of one leaf per thread may run several per block
// (canon_small_loop_kernel is instantiated for these only).
template <class in_t>
constexpr bool chunks_loop() {
  return sizeof(in_t) == 4 || sizeof(in_t) == 2;
}

// Leaves per thread of canon_small_kernel's chunks: canon_per (two for 1- and 2-byte inputs),
// but one for 16-bit inputs that start aligned (16384 elements, 32 KB blocks at five per SM
// against 64 KB ones at four) where such chunks number at most 8192 in all (µs:
// float16 2^24 21.6 -> 18.4, 2^26 49.1 -> 44.3, bfloat16 rows (32, 2^20) 31.4 -> 27.7; 2^27
// within 1%) or where an output has at least 8192 of them, which chunk_loop takes four per
// block (float16 2^29 270.0 -> 262.6), and where there are more than 8192
// in all and at least kChunkLoopFourRow per output, which chunk_loop also takes four per block
// (µs against two leaves per thread in one process: bfloat16 rows (1024, 2^18)
// 141.0 -> 139.0, (2048, 131072), 8 chunks each, 144.1 -> 141.1; float16 (256, 2^20) 140.5 ->
// 138.3, (520, 2^18) 82.8 -> 80.9). More of them one per block measured slower than two leaves
// (float16 2^29 270.3 -> 288.0; bfloat16 (1024, 2^18) 142.4): many outputs of fewer
// chunks each keep two (not measured in loops). 16-bit inputs from a base off a
// 16-byte boundary take the same rule, their leaves shifted one per lane (µs
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
  return sizeof(in_t) == 2 &&
                 (M * chunks <= tuning::kChunkOneLeafMost || chunks >= tuning::kChunkLoopFourRow)
             ? 1
             : most;
}

// Threads per block of canon_small_kernel's chunks (each chunk threads x per leaves, a node of
// the tree whatever its size, µs eager / in a CUDA graph): float32 chunks of 128
// threads (32 KB, as the 16-bit ones of one leaf per thread) where they number at
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
  if (sizeof(in_t) == 4 && chunks(t / 2) <= tuning::kChunkHalfF32Most) t /= 2;
  while (t > 64 &&
         int64_t(t / 2) * kCanonLeaf * per * int64_t(sizeof(in_t)) >= tuning::kChunkMinBytes &&
         chunks(t / 2) <= tuning::kChunkHalvePerSm * sm_count)
    t /= 2;
  return t;
}

// Chunks per block of canon_small_kernel's chunks of one leaf per thread (block x takes chunks
// x, x + grid, ...: the same nodes; canon_small_loop_kernel), for aligned 4- and 2-byte inputs
// and 2-byte ones off a 16-byte boundary (M outputs of `chunks` chunks each):
// - float32: two where an output has at least 2048 chunks (µs against one per
//   block in one call: 2^30 986.6 -> 964.8 (0.996x plain), 2^28 261.1 -> 256.0, 2^26 78.6 ->
//   77.4, 2^24 26.5 / 20.8 -> 25.8 / 20.0 in a CUDA graph; rows (1024, 262144), four chunks
//   each, equal), else one;
// - 16-bit: four where an output has at least 8192 chunks (against two leaves
//   per thread one chunk per block: float16 2^29 270.0 -> 262.6 µs, bfloat16 2^28 145.1 ->
//   142.5; against one per block: float16 2^27 83.4 -> 80.9; bfloat16 2^26, 4096 chunks,
//   43.7 -> 44.7 at two), else two where all outputs have 6 to 16 chunks per SM (the blocks
//   of one chunk would be one to three waves at five per SM, those of two at most two at four:
//   float16 2^24 18.8 / 12.9 -> 18.0 / 12.3 in a CUDA graph, 2^25 28.0 / 22.4 -> 27.5 / 22.0,
//   bfloat16 rows (32, 2^20) 28.3 / 22.2 -> 27.9 / 21.5; (64, 2^20), 31 per SM, 44.0 / 38.7
//   -> 45.1 / 37.6), else one; and four wherever there are more than 8192 in all (chunk_per
//   gives one leaf per thread there only from kChunkLoopFourRow per output:
//   bfloat16 rows (1024, 2^18) 142.4 µs at one per block, 139.0 at four).
// Misaligned 16-bit chunks follow the same rule (bfloat16 x[1:] 2^28, 16384
// chunks, 152.8 µs at four per block, 153.7 at one, 156.5 at two). One for misaligned float32
// views (measured no faster looped: 2^25 and 2^26 2% slower, 2^28 equal),
// float64 and two-leaf chunks (the loop kernel folds one leaf per thread). loop=C forces C
// where the kernel loops.
template <class in_t>
int chunk_loop(int64_t M, int64_t chunks, bool aligned, int per, int sm_count,
               const CanonOverride& ov) {
  if (!chunks_loop<in_t>() || (!aligned && sizeof(in_t) != 2) || per != 1) return 1;
  if (ov.small > 0 && ov.loop > 0) return ov.loop;
  if (sizeof(in_t) == 4) return chunks >= tuning::kChunkLoopTwoF32 ? 2 : 1;
  if (chunks >= tuning::kChunkLoopFour || M * chunks > tuning::kChunkLoopFour) return 4;
  return M * chunks >= tuning::kChunkLoopTwoPerSmLo * sm_count &&
                 M * chunks <= tuning::kChunkLoopTwoPerSmHi * sm_count
             ? 2
             : 1;
}

// Whether an output's chunks are the blocks of one thread-block cluster, which merges their
// nodes in the first block's shared memory (canon_small_kernel<..., kCluster = true>) instead
// of through partials in global memory and the atomic arrival: aligned chunks of one leaf per
// thread, one per block, 2 to kChunkCluster (portable clusters) per output (µs
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
// one-leaf threads, each row's chunks the blocks of one cluster: outputs whose chunks
// chunk_cluster merges (aligned float32 or 16-bit, 2 to kChunkCluster each; at most one block
// per SM in all, so chunk_per gives them one leaf per thread and chunk_loop one chunk per
// block) (µs eager / in a CUDA graph: float32 (8, 131072) 8.9 / 4.6 through the latency
// kernel's clusters of 16 blocks of 128 threads, 8.2 / 3.7 in clusters of 8 blocks of 256;
// plain 9.4 / 4.4), and full sums (M = 1) too (cluster_rows_threads). cluster=0 turns it off.
template <class in_t>
bool cluster_rows(int64_t M, int64_t K, bool aligned, int sm_count, bool clusters,
                  const CanonOverride& ov) {
  const int64_t chunks = ceil_div(K, int64_t(kCanonThreads) * kCanonLeaf);
  return M * chunks <= sm_count && chunk_cluster<in_t>(chunks, aligned, 1, 1, clusters, ov) &&
         !chunks_auto<in_t>(M, ceil_div(K, int64_t(kCanonThreads) * kCanonLeaf * canon_per<in_t>()),
                            sm_count);
}

// Threads per chunk of cluster_rows' outputs: kCanonThreads, but for a full sum
// tuning::kClusterSumThreads where its chunks of that many one-leaf threads are still at most
// kChunkCluster (one cluster of more, smaller blocks).
inline int cluster_rows_threads(int64_t M, int64_t K) {
  constexpr int t = tuning::kClusterSumThreads;
  return M == 1 && ceil_div(K, int64_t(t) * kCanonLeaf) <= kChunkCluster ? t : kCanonThreads;
}

}  // namespace treduce
