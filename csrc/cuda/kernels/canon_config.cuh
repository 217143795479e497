// canon_config.cuh: floating sums and means in the canonical order (docs/numerics.md).
// Raw CUDA, nothing from torch.
//
// The order, the same as the CPU backend's: the K reduced elements of an output, in logical
// order, are cut into leaves of kCanonLeaf = 64 at fixed positions; each leaf is folded in order
// (Op::reduce: in double for inputs of at most 32 bits, WideSumOp; compensated doubles for
// float64, CompSumOp); the leaves meet in the perfect binary tree over leaf index (pairs
// (2k, 2k + 1) first; missing leaves are the identity, which combines exactly); finalize rounds
// once. Every launch configuration below only changes who computes a node of that tree, never
// the additions, so the bits depend on the values, K, the dtype and the op only.
//
// Work split: a block of kCanonThreads threads is X output lanes times Y leaf lanes (thread
// tid = ty * X + tx). Each thread folds kPer (1 or 2) adjacent leaves per round, merged at
// once (their node), for kVec neighbouring outputs (one 16-byte or 8-byte load per reduced
// element when the outputs are contiguous, the column layout), so a round covers per * Y
// consecutive leaves: the tree over ty (warp shuffles, then shared memory) makes their node of
// height log2(per * Y). Two leaves per thread halve the tree's and the barriers' cost per
// element. Thread ty = 0 pushes each round's node onto a binary counter (its low levels in shared
// memory: RoundLevels), which merges nodes of equal height as they complete: over a power-of-two
// number of rounds that is again the perfect tree. When there are too few output tiles to fill
// the GPU, a tile's rounds are cut into splits, each a power-of-two run of rounds at an aligned
// position (a node of the tree), which the tile's gridDim.y blocks take in turn; each block
// arrives once, after its last split, and the last to arrive merges the splits' nodes by the
// same tree (arrive_last), in the same launch.
// Row layouts stage each warp's 32 leaves through shared memory (fold_leaf_staged) so that the
// loads stay coalesced while every lane folds its own leaf.
//
//   canon_kernel<WideSumOp<float>, float, float, 1><<<grid, kCanonThreads, 0, stream>>>(
//       in, out, geom, cfg, partials, counters);
#pragma once
#include <algorithm>

#include "../../geometry.h"
#include "common.cuh"
#include "tuning.cuh"

namespace treduce {

constexpr int kCanonThreads = 256;
constexpr int kCanonLevels = 21;   // binary-counter levels: at most 2^20 rounds per split
constexpr int kClusterSlots = 32;  // the latency kernel: splits x output lanes at most
constexpr int kChunkCluster = 8;   // canon_small_kernel: chunks per cluster at most (portable)

struct CanonConfig {
  int X;                     // output lanes per block (power of two)
  int Y;                     // leaf lanes per block (power of two), X * Y = kCanonThreads
  int64_t leaves;            // L = ceil(K / kCanonLeaf) per output
  int per;                   // leaves per thread per round (1 or 2, adjacent): the kernel's kPer
                             // (canon_small_kernel's chunks: its kL)
  int64_t rounds;            // ceil(L / (per * Y))
  int64_t tiles;             // ceil(M / (X * kVec))
  int splits;                // S: splits per tile (gridDim.y blocks take them in turn)
  int64_t rounds_per_split;  // a power of two; S * rounds_per_split >= rounds
  int merge_per_thread;      // c: split nodes per thread in the final merge (power of two)
  int step;                  // the innermost reduced dim's stride when it is 1 (rows, NCHW) or
                             // 2 (a view with a step of 2), or kVec (each reduced element's
                             // row is the kVec outputs of a thread: the column staging), else 0
  StepDigits one;            // a step of 1 through g.red
};

// Outputs per thread in the column layout: 16-byte loads for 4-byte inputs, 8-byte loads of four
// for 2-byte inputs (four 8-byte accumulators keep the registers in bounds), two doubles.
template <class in_t>
constexpr int canon_vec() {
  return sizeof(in_t) >= 8 ? 2 : 4;
}

// Whether canon_kernel<Op, ..., vec, ..., kStage = true> fits: its stage beside the tree's
// kCanonThreads * vec accumulators in 48 KB (not four compensated float64 outputs, float32
// into a float64 result).
template <class Op>
constexpr bool canon_stage_fits(int vec) {
  return vec > 1 && vec * sizeof(typename Op::acc_t) <= 32;
}

// Leaves per thread and round that canon_kernel<..., kVec = 1, kPer> is built with: 2 for 1- and
// 2-byte inputs, 1 otherwise. Two leaves per round halve the tree's and the barriers' cost per
// element (float16 full sums +12%), and a warp whose lanes' leaf pairs are whole,
// aligned and contiguous folds both side by side: two chains of dependent additions per thread
// instead of one (+7%). Float32 measured 33% slower with two leaves side by side: each
// phase then reads a quarter of every 256-byte leaf pair region.
constexpr int canon_per_of(int elem_size) { return elem_size <= 2 ? 2 : 1; }  // (host: tile_stage)
template <class in_t>
constexpr int canon_per() {
  return canon_per_of(sizeof(in_t));
}

// A forced configuration for tests (treduce._force_launch, see call.cuh): 0 means automatic.
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
  int tile = -1;     // transposed reduced blocks staged (canon_tile_kernel): -1 automatic, 0
                     // never, 1 wherever they fit

  // A forced block shape, split count, rounds or leaves per thread (which the tile, small,
  // chunk, packed and pair routes cannot honour, so they step aside).
  bool forces_shape() const { return y > 0 || splits > 0 || rounds > 0 || per > 0; }
};

// Shared memory of canon_tile_kernel's staged block, at most (three blocks per SM): float32
// outputs of 16384 elements, 16-bit ones of 32768, float64 ones of 8192.
constexpr int64_t kTileStageMaxBytes = int64_t(68) << 10;

// Bytes of shared memory that K elements of elem_size bytes take staged by canon_tile_kernel:
// kCanonLeaf elements a leaf and tile_pad elements of padding, 4 bytes (8 for 8-byte elements),
// so that the lanes of a warp, each folding its own leaf, read different banks.
constexpr int tile_pad(int elem_size) { return elem_size >= 4 ? 1 : 4 / elem_size; }
inline int64_t tile_stage_bytes(int64_t K, int elem_size) {
  return (K + kCanonLeaf - 1) / kCanonLeaf * (kCanonLeaf + tile_pad(elem_size)) * elem_size;
}

// Whether the reduced dims (logical order) are stored transposed: the innermost is neither
// contiguous nor a step of two (canon_kernel's step) while another is contiguous, as in the
// H x W maps of a tensor transposed in memory or channels-last images reduced over (C, H, W).
// The canonical order reads the elements in the logical order: the kernels other than
// canon_tile_kernel walk such a block element by element.
inline bool reduced_block_transposed(const IndexMap& r) {
  if (r.ndim < 2 || r.in_strides[r.ndim - 1] <= 2) return false;
  for (int d = 0; d < r.ndim - 1; ++d)
    if (r.in_strides[d] == 1) return true;
  return false;
}

// Whether canon_tile_kernel takes the outputs (plan_canon's route_tile; the torch side then does
// not copy the block): a transposed reduced block of K elements, at least kTileMinElems
// (shorter blocks cost more staged than copied), that fit the stage, one block's
// leaves (kCanonThreads threads of canon_per leaves) and the staging walk (tile_map_fits: at most
// kTileDims dims, 32-bit offsets). Forced (tile=1) for any layout whose outputs fit (its staging
// reads any map in memory order); a forced shape, latency kernel or small kernel turns the
// automatic choice off.
inline bool tile_stage(const Geometry& g, int elem_size, const CanonOverride& ov) {
  const bool other = ov.forces_shape() || ov.lat >= 0 || ov.small >= 0;
  if (ov.tile == 0 ||
      (ov.tile < 0 &&
       (other || !reduced_block_transposed(g.red) || g.reduce_len < tuning::kTileMinElems)) ||
      g.num_outputs > INT32_MAX || !tile_map_fits(g.red))
    return false;
  return g.reduce_len <= int64_t(kCanonThreads) * kCanonLeaf * canon_per_of(elem_size) &&
         tile_stage_bytes(g.reduce_len, elem_size) <= kTileStageMaxBytes;
}

}  // namespace treduce
