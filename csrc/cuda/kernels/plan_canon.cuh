// plan_canon.cuh: the canonical planner, from a Geometry to a launch of the canonical-order
// kernels (canon_kernel.cuh, canon_small.cuh, packed rows). Every configuration only changes who
// computes a node of the canonical tree, never the additions. Raw CUDA, nothing from torch.
//
//   CanonLaunch lc = plan_canon<Op, in_t, out_t>(geom, in, sm_count, CanonOverride{}, clusters);
//   ... the caller provides lc.partials acc_t slots and lc.counters zeroed counters ...
//   run_canon_launch<Op, in_t, out_t>(lc, geom, in, out, partials, counters, stream);
//
// The planner is an ordered list of routes; the first whose predicate takes the geometry builds
// the launch: transposed blocks staged (route_tile), one block per output (route_small), chunks of
// an output (route_chunks), packed short rows (route_packed), rows of two or four vectors
// (route_pair), else canon_kernel's tiles (TilePlan), whose block shape, splits and kernel variant
// are chosen in steps.
#pragma once
#include <algorithm>
#include <tuple>

#include "canon_tile.cuh"
#include "plan_canon_rules.cuh"
#include "tuning.cuh"

namespace treduce {

// What every route reads: the geometry, the input's base, the GPU, a test's forced launch.
template <class in_t>
struct CanonQuery {
  const Geometry& g;
  const in_t* in;
  int sm_count;
  const CanonOverride& ov;
  bool clusters;  // the GPU has thread-block clusters (sm_90), which the latency kernel needs
  bool forced() const { return ov.forces_shape(); }
  bool aligned() const { return reinterpret_cast<uintptr_t>(in) % 16 == 0; }
};

// Blocks that fit the stage (tile_stage) through canon_tile_kernel, one block per output, not
// walked element by element (or copied first): small_threads lanes, at least kTileMinThreads,
// kTileFewOutputsThreads where the outputs are few (tile=1,threads=N: N).
template <class Op, class in_t, class out_t>
bool route_tile(const CanonQuery<in_t>& q, CanonLaunch& lc) {
  if (!tile_stage(q.g, sizeof(in_t), q.ov)) return false;
  const int64_t K = q.g.reduce_len;
  const bool few = q.g.num_outputs <= int64_t(tuning::kTileFewOutputsPerSm) * q.sm_count;
  const int least = q.ov.tile > 0 && q.ov.threads > 0 ? q.ov.threads
                    : few                             ? tuning::kTileFewOutputsThreads
                                                      : tuning::kTileMinThreads;
  lc.tile = true;
  lc.grid = dim3(static_cast<unsigned>(q.g.num_outputs));
  lc.block = dim3(
      static_cast<unsigned>(std::max(small_threads(K, small_leaves_per_thread<in_t>(K)), least)));
  return true;
}

// One block per output (canon_small_kernel) for rows and full sums of at most 256 leaves
// (16384 float32 elements) that start aligned: where every block has an SM of its own, and
// for more outputs where each has at least 64 leaves. In a CUDA graph, full
// float32 sums of 2^10 took 1.85 µs against 2.58 through the latency kernel, 2^14 2.88
// against 3.33; eager, rows (4096, 4096) 23.4 µs against 25.4, bfloat16 rows (16384, 16384)
// 130.9 against 152.8; but rows of 16 leaves, (65536, 1024), 105.7 against 75.3 (half of each
// block's warp idle). 257-512 leaves of 1- and 2-byte inputs (two per thread) only where
// there are more than a third as many outputs as SMs, so that the latency kernel would give
// each at most two SMs: bfloat16 rows (16384, 32768) 254.6 µs against 282.1, (64, 32768)
// 8.45 / 4.03 (eager / graph) against 8.83 / 4.36, but the full sum of 2^15 7.20 / 3.70
// against 6.46 / 3.20 (one SM converts all 32768 values). The same outputs
// from a base off a 16-byte boundary (rows whose kept stride is whole vectors)
// where each has at least 64 leaves and there are more than a third as many outputs as
// SMs (misaligned float32 rows (16384, 16384) ran canon_kernel's rows, 268.4 µs against
// 257.4): fewer outputs keep the kernels that split them over SMs (the unaligned fold is
// slower per element), fewer leaves too (a warp of partial leaves folds element by element
// there). Forced (small=1) wherever the layout allows it; a forced shape or latency kernel
// turns it off.
template <class Op, class in_t, class out_t>
bool route_small(const CanonQuery<in_t>& q, CanonLaunch& lc) {
  const int64_t M = q.g.num_outputs, K = q.g.reduce_len;
  const int64_t leaves = ceil_div(K, kCanonLeaf);
  const bool many_outputs = tuning::kSmallOutputsPerSmDiv * M > q.sm_count;
  const bool small_auto = !q.aligned() ? leaves >= tuning::kSmallMinLeaves && many_outputs
                          : small_leaves_per_thread<in_t>(K) == 2
                              ? many_outputs
                              : M <= q.sm_count || leaves >= tuning::kSmallMinLeaves;
  const int t = small_block<Op, in_t>(q.g, q.in);
  if (t <= 0 || M > INT32_MAX ||
      !(q.ov.small > 0 || (q.ov.small < 0 && !q.forced() && q.ov.lat < 0 && small_auto)))
    return false;
  lc.small = true;
  lc.whole = q.ov.whole;
  lc.block = dim3(static_cast<unsigned>(t));
  lc.grid = dim3(static_cast<unsigned>(M));
  return true;
}

// Longer outputs of the same layout in chunks of one block's leaves (canon_small_kernel with
// chunk > 0) where chunks_auto says so (counted in chunks of canon_per leaves per thread) or
// cluster_rows does (chunks of kCanonThreads threads, in clusters); forced with small=1
// wherever the layout allows it. The leaves per thread: see chunk_per.
template <class Op, class in_t, class out_t>
bool route_chunks(const CanonQuery<in_t>& q, CanonLaunch& lc) {
  const int64_t M = q.g.num_outputs, K = q.g.reduce_len;
  const CanonOverride& ov = q.ov;
  const bool aligned = q.aligned();
  const bool rows_in_clusters = cluster_rows<in_t>(M, K, aligned, q.sm_count, q.clusters, ov);
  const int64_t most = int64_t(kCanonThreads) * kCanonLeaf * canon_per<in_t>();
  if (!(K > most && M <= std::min<int64_t>(65535, kCounterCapacity) &&
        ceil_div(K, most) <= INT32_MAX && chunk_rows<Op, in_t>(q.g, q.in) &&
        (ov.small > 0 ||
         (ov.small < 0 && !q.forced() && ov.lat < 0 &&
          (chunks_auto<in_t>(M, ceil_div(K, most), q.sm_count) || rows_in_clusters)))))
    return false;
  const int per = chunk_per<in_t>(M, K, aligned, ov);
  const int threads = rows_in_clusters && !(ov.small > 0 && ov.threads > 0)
                          ? cluster_rows_threads(M, K)
                          : chunk_threads<in_t>(M, K, per, q.sm_count, ov);
  const int64_t len = int64_t(threads) * kCanonLeaf * per;
  const int64_t chunks = ceil_div(K, len);
  const int loop = chunk_loop<in_t>(M, chunks, aligned, per, q.sm_count, ov);
  CanonConfig& c = lc.cfg;
  lc.small = true;
  lc.chunk = len;
  lc.cluster = chunk_cluster<in_t>(chunks, aligned, per, loop, q.clusters, ov);
  c.per = per;
  lc.block = dim3(static_cast<unsigned>(threads));
  lc.grid = dim3(static_cast<unsigned>(ceil_div(chunks, loop)), static_cast<unsigned>(M));
  c.splits = static_cast<int>(chunks);
  c.merge_per_thread = static_cast<int>(next_pow2(ceil_div(chunks, int64_t(threads))));
  lc.partials = lc.cluster ? 0 : M * chunks;
  lc.counters = lc.cluster ? 0 : M;
  return true;
}

// Rows of K = 2, 4, 8 or 16 elements inside 16-byte vectors: packed_rows_kernel, whose in-order
// fold of a whole row is the canonical order (one leaf).
template <class Op, class in_t, class out_t>
bool route_packed(const CanonQuery<in_t>& q, CanonLaunch& lc) {
  if (q.forced() || choose_strategy(q.g) != Strategy::kRows || !rows_packable<in_t>(q.g, q.in))
    return false;
  lc.packed = true;
  lc.packed_vecs = q.g.num_outputs * q.g.reduce_len / vec_width<in_t>();
  lc.block = dim3(kRowsBlock);
  lc.grid =
      packed_grid(lc.packed_vecs, int64_t(q.sm_count) * packed_blocks_per_sm<Op, in_t, out_t>());
  return true;
}

// Aligned rows of two or four 16-byte vectors: pair_rows_kernel.
template <class Op, class in_t, class out_t>
bool route_pair(const CanonQuery<in_t>& q, CanonLaunch& lc) {
  if (q.forced()) return false;
  lc.pair = pair_rows<in_t>(q.g, q.in);
  if (lc.pair == 0) return false;
  static const int per_sm = std::min(occupancy(pair_rows_kernel<Op, in_t, out_t, 2>, kPairThreads),
                                     occupancy(pair_rows_kernel<Op, in_t, out_t, 4>, kPairThreads));
  lc.block = dim3(kPairThreads);
  const int64_t rows_per_block = int64_t(kPairThreads) * (kPairLoads / lc.pair);
  lc.grid = dim3(static_cast<unsigned>(std::max<int64_t>(
      1, std::min(ceil_div(q.g.num_outputs, rows_per_block), int64_t(q.sm_count) * per_sm))));
  return true;
}

// canon_kernel's tiles: outputs per thread (vec), leaves per thread and round (per), output lanes
// X (then Y = kCanonThreads / X leaf lanes), splits and rounds per split, then the kernel
// variant (interleaved leaves, the latency kernel). plan() runs the steps in that order.
template <class Op, class in_t, class out_t>
struct TilePlan {
  const CanonQuery<in_t>& q;
  CanonLaunch& lc;
  CanonConfig& c;
  int64_t M, K;
  bool columns = false;      // the column strategy (outputs contiguous)
  int64_t inner_stride = 0;  // the innermost reduced dim's stride
  int x_leaves = 1;          // output lanes that an output's leaves per round allow
  int x_columns = 1;         // output lanes a column layout's row of outputs fills (at most 32)
  int64_t target = 0;        // resident blocks of the chosen kernel on the whole GPU

  TilePlan(const CanonQuery<in_t>& query, CanonLaunch& launch)
      : q(query), lc(launch), c(launch.cfg), M(query.g.num_outputs), K(query.g.reduce_len) {}

  void plan();
  void choose_vec();
  void choose_per();
  int64_t shape(int X, bool final_shape = false);
  int64_t blocks_for(bool countable, int64_t& fine_rps) const;
  int64_t rounds_per_split(int64_t blocks, bool one_lane, bool one_round, bool countable,
                           int64_t fine_rps, bool final_shape) const;
  dim3 grid_of(int64_t blocks) const;
  int64_t makespan(int x, bool listed);
  int choose_lanes();
  int lanes_for_shifted_leaves(int X, bool& shifted) const;
  int lanes_for_short_runs(int X, bool shifted) const;
  int lanes_for_whole_waves(int X);
  int lanes_for_columns(int X);
  void choose_interleaved();
  void choose_latency();
};

template <class Op, class in_t, class out_t>
void TilePlan<Op, in_t, out_t>::plan() {
  columns = choose_strategy(q.g) == Strategy::kColumns;
  inner_stride = q.g.red.in_strides[q.g.red.ndim - 1];
  choose_vec();
  c.leaves = ceil_div(K, kCanonLeaf);
  choose_per();
  x_leaves = static_cast<int>(
      kCanonThreads / next_pow2(std::min<int64_t>(kCanonThreads, ceil_div(c.leaves, c.per))));
  x_columns = columns ? static_cast<int>(std::min<int64_t>(
                            32, next_pow2(ceil_div(q.g.kept.sizes[q.g.kept.ndim - 1], lc.vec))))
                      : 1;
  c.step = inner_stride == 1 || inner_stride == 2 || (lc.vec > 1 && inner_stride == lc.vec)
               ? static_cast<int>(inner_stride)
               : 0;
  // The column staging (canon_kernel<..., kStage = true>) where each reduced element's row is
  // exactly a thread's outputs.
  lc.stage = c.step == lc.vec && canon_stage_fits<Op>(lc.vec);
  c.one = step_digits(q.g.red, 1);
  target = int64_t(q.sm_count) * canon_blocks_per_sm<Op, in_t, out_t>(lc.vec, c.per);
  const int X = choose_lanes();
  lc.block = dim3(kCanonThreads);
  lc.grid = grid_of(shape(X, /*final_shape=*/true));
  choose_interleaved();
  choose_latency();
  const bool global_merge = c.splits > 1 && !lc.lat;
  lc.partials = global_merge ? c.tiles * c.X * lc.vec * c.splits : 0;
  lc.counters = global_merge ? c.tiles : 0;
}

// Outputs per thread: canon_vec() neighbouring outputs in one load where a column layout is
// aligned for it.
template <class Op, class in_t, class out_t>
void TilePlan<Op, in_t, out_t>::choose_vec() {
  const Geometry& g = q.g;
  constexpr int V = canon_vec<in_t>();
  lc.vec = columns && columns_aligned(g, q.in, V, sizeof(in_t)) ? V : 1;
  // float32 outputs in pairs where each reduced element's row is exactly two outputs (two
  // columns, C = 2 mid dims) and rows start on 16-byte boundaries: canon_kernel<..., 2>, whose
  // warps stage their leaves (64 rows of both outputs, 512 contiguous bytes) with coalesced
  // loads. One output per thread read every line twice, 48% of the read stream; pairs through
  // fold_leaf's 8-byte loads were slower still.
  if (sizeof(in_t) == 4 && canon_stage_fits<Op>(2) && columns && lc.vec == 1 && inner_stride == 2 &&
      columns_aligned(g, q.in, 2, sizeof(in_t)) && column_pairs_aligned<in_t>(g, q.in))
    lc.vec = 2;
  // V outputs per thread divide the independent leaf folds (one thread each) by V. When there
  // are fewer of them than one wave of blocks has threads even at one output per thread (mid
  // dims with a few outputs per row: (8, 65536, 4) over dim 1 has 32 outputs of 1024 leaves,
  // 32 blocks with V = 4, 128 with one), take one. A forced block shape (tests) keeps V.
  if (lc.vec > 1 && q.ov.y == 0 &&
      M * ceil_div(K, kCanonLeaf) <
          int64_t(q.sm_count) * canon_blocks_per_sm<Op, in_t, out_t>(V) * kCanonThreads)
    lc.vec = 1;
}

// Two adjacent leaves per thread and round for 1- and 2-byte inputs (canon_per) when there
// are leaves enough for two waves of blocks that way; one output per thread only (four
// outputs' second accumulators would spill). Not over runs of an outer reduced dim (NCHW
// statistics, transposed bias gradients): there one leaf per thread measured faster on every
// shape the pairs took, at the same output lanes and as planned (H100, µs, bfloat16 over
// (0, 2, 3), two leaves -> one as planned: (16, 1024, 56, 56) 63.3 -> 48.9, (16, 2048, 56, 56)
// 107.1 -> 87.9, (64, 2048, 28, 28) 143.0 -> 131.1; (32, 512, 32, 32), whose pairs never cross
// a run, 27.1 -> 22.5; (2, 8192, 4096) with T innermost over (0, 1), runs of 128 leaves, 66.3
// -> 56.3): a pair that crosses from one run into the next leaves its warp's staging, and the
// pair kernel's round is twice as long. A forced per = 2 applies where it is built.
template <class Op, class in_t, class out_t>
void TilePlan<Op, in_t, out_t>::choose_per() {
  const int64_t wave_threads =
      int64_t(q.sm_count) * canon_blocks_per_sm<Op, in_t, out_t>(lc.vec) * kCanonThreads;
  const bool outer_runs = q.g.red.ndim >= 2 && inner_stride == 1;
  c.per = lc.vec > 1 || canon_per<in_t>() == 1 ? 1
          : q.ov.per > 0                       ? q.ov.per
          : outer_runs                         ? 1
          : M * c.leaves >= 2 * wave_threads   ? 2
                                               : 1;
}

// The rest of the configuration for X output lanes: Y, rounds, tiles, then blocks per tile as
// for the other kernels, and splits of a power-of-two number of rounds (nodes of the tree),
// about eight per block so that the blocks' shares stay even. Returns the blocks per tile.
// `final_shape`: the call for the chosen lanes, not one of the lane choice's trials.
template <class Op, class in_t, class out_t>
int64_t TilePlan<Op, in_t, out_t>::shape(int X, bool final_shape) {
  const CanonOverride& ov = q.ov;
  c.X = X;
  c.Y = kCanonThreads / c.X;
  c.rounds = ceil_div(c.leaves, int64_t(c.Y) * c.per);
  c.tiles = ceil_div(M, int64_t(c.X) * lc.vec);
  const bool countable = c.tiles <= kCounterCapacity;  // split tiles need a counter each
  // One output lane (X = 1): splits of at most 4 rounds, whose merge loads 128-byte runs
  // coalesced and merges them in registers: full float32 sums 2^30 took 1042 µs
  // with the 16 rounds per split of the rule below, 1022 with 4.
  const bool one_lane = lc.vec == 1 && X == 1;
  int64_t fine_rps = 0;
  int64_t blocks = blocks_for(countable, fine_rps);
  // 16-bit columns (four outputs per thread): one round per split, however the tile is cut.
  // A split of several rounds pushes each round's node onto the round counter in local
  // memory, and those pushes cost more than the split nodes they save: µs eager, bfloat16
  // (32768, 16384) over dim 0 in the same 2 x 256 blocks 264.5 at one round per split
  // against 293.6 at two; (64, 8192, 1024) over dim 1, 32 lanes in 512 blocks, 271.3 at one
  // against 277.8 at 16; float32 columns unchanged at one.
  const bool one_round = lc.vec > 1 && sizeof(in_t) == 2 && countable;
  const int64_t rps =
      rounds_per_split(blocks, one_lane, one_round, countable, fine_rps, final_shape);
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
  // as 2 x 128 of 2 splits 50.8; (262144, 128) 4 x 99 47.6, 4 x 64 46.9.
  if (lc.vec > 1 && ov.splits == 0) blocks = ceil_div(c.splits, ceil_div(c.splits, blocks));
  return blocks;
}

// Blocks per tile for shape(): a forced count, or the splits that fill the waves best; columns
// with a wave or more of tiles may instead cut each tile into splits of `fine_rps` rounds.
template <class Op, class in_t, class out_t>
int64_t TilePlan<Op, in_t, out_t>::blocks_for(bool countable, int64_t& fine_rps) const {
  const CanonOverride& ov = q.ov;
  int64_t blocks = ov.splits > 0 ? ov.splits : choose_splits(c.tiles, c.rounds, 1, target);
  blocks = std::max<int64_t>(1, std::min({blocks, c.rounds, kMaxSplits}));
  if (!countable) blocks = 1;
  // Columns with a wave or more of tiles: each tile cut into splits of a power-of-two run of
  // rounds, one block each, where the smaller units fill the waves enough better to pay for
  // the split nodes' stores and merge, costed at 6% (measured 5.3%: (64, 4096, 1024) over dim
  // 1 at two splits of two rounds per 16-lane tile took 284.6 µs against 270.4 unsplit, the
  // same rounds in whole waves). Unsplit, that shape's 1024 tiles of 4 rounds are 2.59 waves of
  // 396 blocks, 12 rounds for the busiest SM slot; 4096 blocks of one round are 11 rounds:
  // 257.0 µs forced, 260.2 as the lane choice takes it (8 lanes, 2 splits: the fewest
  // split nodes among the shapes of 11 rounds).
  if (lc.vec > 1 && ov.splits == 0 && ov.rounds == 0 && blocks == 1 && countable &&
      c.tiles >= target) {
    const int64_t gx = std::min(c.tiles, target * kGridCapWaves);
    int64_t best = ceil_div(gx, target) * ceil_div(c.tiles, gx) * c.rounds * 100;
    for (int64_t r = 1; r < c.rounds; r *= 2) {
      const int64_t s = ceil_div(c.rounds, r);
      if (c.tiles * s > (int64_t(1) << 16)) continue;
      const int64_t cost = ceil_div(c.tiles * s, target) * r * tuning::kSplitCostPercent;
      if (cost < best) {
        best = cost;
        fine_rps = r;
      }
    }
    if (fine_rps > 0) blocks = ceil_div(c.rounds, fine_rps);
  }
  return blocks;
}

// Rounds per split for shape(): a power of two, at most 2^20.
template <class Op, class in_t, class out_t>
int64_t TilePlan<Op, in_t, out_t>::rounds_per_split(int64_t blocks, bool one_lane, bool one_round,
                                                    bool countable, int64_t fine_rps,
                                                    bool final_shape) const {
  const CanonOverride& ov = q.ov;
  int64_t rps = 1;
  if (ov.rounds > 0 && countable)
    rps = ov.rounds;
  else if (one_round)
    rps = 1;
  else if (fine_rps > 0)
    rps = fine_rps;
  else if (blocks > 1)
    while (rps * 2 * blocks * 8 <= c.rounds &&
           !(one_lane && rps >= tuning::kOneLaneMaxRoundsPerSplit))
      rps *= 2;
  else
    while (rps < c.rounds) rps *= 2;
  // The final merge reads c = S / Y nodes per thread: keep c at most 16 (64 per thread made
  // narrow columns and NHWC statistics 1.7-2x slower one load at a time;
  // with the nodes in batches and coalesced, 16 made them 1.2x faster than 8), or 64 for one
  // output lane, unless a test forces the rounds per split.
  const int64_t merge_per_thread =
      one_lane ? tuning::kMergePerThreadOneLane : tuning::kMergePerThread;
  if (ov.rounds == 0)
    while (rps < c.rounds && ceil_div(c.rounds, rps) > int64_t(c.Y) * merge_per_thread) rps *= 2;
  // 16-bit columns that the merge's limit pushes to two rounds per split take four, once the
  // lanes are chosen (`final_shape`; the lane choice still sees two): two measured 3-5% slower
  // than one or four in the same lanes (µs eager, rounds 1 / 2 / 4: bfloat16 (2097152, 64)
  // over dim 0, 32 leaf lanes, 96.9 / 100.2 / 96.0; (4194304, 32), 64 leaf lanes, 91.3 / 95.7
  // / 90.0; (1048576, 128), 32 leaf lanes, 107.5 / 108.5 / 104.7).
  if (final_shape && one_round && ov.rounds == 0 && rps == 2 && c.rounds > 2) rps = 4;
  constexpr int64_t kMaxRounds = int64_t(1) << (kCanonLevels - 1);
  return std::min(rps, kMaxRounds);
}

// The grid for the configuration shape() left, given its blocks per tile: split tiles get one
// block along x each and `blocks` along y; unsplit tiles are strided over at most
// kGridCapWaves waves of blocks.
template <class Op, class in_t, class out_t>
dim3 TilePlan<Op, in_t, out_t>::grid_of(int64_t blocks) const {
  return c.splits > 1 ? dim3(static_cast<unsigned>(c.tiles), static_cast<unsigned>(blocks))
                      : dim3(static_cast<unsigned>(std::min(c.tiles, target * kGridCapWaves)), 1);
}

// The configuration for X = x (shape(x), left in c) and its estimated makespan in rounds per
// block slot: split tiles' blocks listed in launch order on the first free slot (`listed`) or
// as whole waves of the busiest block (split_makespan); unsplit tiles as whole waves.
template <class Op, class in_t, class out_t>
int64_t TilePlan<Op, in_t, out_t>::makespan(int x, bool listed) {
  const dim3 grid = grid_of(shape(x));
  return c.splits > 1 ? split_makespan(grid.x, grid.y, c.splits, c.rounds_per_split, target, listed)
                      : ceil_div(grid.x, target) * ceil_div(c.tiles, grid.x) * c.rounds;
}

// Output lanes: as many as an output has leaves per round allow (x_leaves), and column layouts
// at least their outputs side by side, up to 32 (x_columns). Taking at most the leaves also
// for columns keeps every lane busy where an output has few leaves: (1024, 1024, 2) over dim 1
// (16 leaves per output) ran 2 output lanes x 128 leaf lanes, 1/8 of them busy, 22.4 µs;
// 16 x 16 took 12.8 µs. Then the layouts that measured better with more lanes.
template <class Op, class in_t, class out_t>
int TilePlan<Op, in_t, out_t>::choose_lanes() {
  int X = q.ov.y > 0 ? kCanonThreads / q.ov.y : std::max(x_leaves, x_columns);
  bool shifted = false;
  X = lanes_for_shifted_leaves(X, shifted);
  X = lanes_for_short_runs(X, shifted);
  X = lanes_for_whole_waves(X);
  return lanes_for_columns(X);
}

// Misaligned 16-bit leaves of several reduced dims (misaligned NCHW statistics): the shifted
// staging (fold_leaves_shifted) needs the 32 / X lanes of each output in a warp, c.per
// leaves each, to hold leaves that follow each other in memory, so enough output lanes that
// those leaves stay inside one run of the innermost reduced dim. (64, 256, 32, 32) over (0, 2,
// 3) from x[1:] (runs of 16 leaves) took 0.70x the aligned time with one output lane (element
// staging); an edit of the kernel's check instead moved the aligned kernels.
// Only where the outputs fill those lanes (a non-contiguous full sum, M = 1, would leave
// most of them idle), and where every memory run starts the same number of elements past a
// 16-byte boundary (the outer reduced and the kept strides multiples of 8 elements), which
// the shifted staging also needs: otherwise the warps stage element by element whatever X.
template <class Op, class in_t, class out_t>
int TilePlan<Op, in_t, out_t>::lanes_for_shifted_leaves(int X, bool& shifted) const {
  const Geometry& g = q.g;
  shifted = q.ov.y == 0 && sizeof(in_t) == 2 && lc.vec == 1 && c.step == 1 && g.red.ndim >= 2 &&
            (reinterpret_cast<uintptr_t>(q.in) & 15) != 0 &&
            g.red.sizes[g.red.ndim - 1] % (int64_t(kCanonLeaf) * c.per) == 0 &&
            outer_strides_whole_vectors<in_t>(g);
  if (!shifted) return X;
  const int64_t run_leaves = g.red.sizes[g.red.ndim - 1] / kCanonLeaf;
  const int64_t lanes = (run_leaves & -run_leaves) / c.per;  // >= 1
  if (lanes < 32 && M >= 32 / lanes) X = std::max<int>(X, static_cast<int>(32 / lanes));
  return X;
}

// Runs of the innermost reduced dim shorter than 1 KB (NCHW statistics of 5 x 5 .. 14 x 14
// maps) and fewer than 8 output lanes: 32 (at most the outputs), whose leaves at one reduced
// position are the runs of 32 neighbouring channels, one stretch of memory per block and
// phase. With 1-4 lanes a block's reads are runs of 1-4 channels a whole image apart:
// (128, 2048, 7, 7) float32 took 66.5 µs with 2 output lanes against 33.4 with 32 (torch
// 48.5), bfloat16 (4 lanes) 62.1 against 27.3; (256, 256, 5, 5) 23.6 against 12.2;
// (64, 1024, 14, 14) 35.6 with one against 32.2. Not from 16: (16, 2048, 7, 7), 13 leaves per
// output, took 12.7 µs as 16 lanes of one round against 14.2 as 32 of two splits.
// Runs of up to 4 KB that are not whole leaves too (28 x 28 maps: 12.25 leaves, three runs in
// four end inside a leaf): with 32 lanes a warp's leaves lie at one reduced position and cross
// a run's end together; with fewer, the crossing leaf's lane leaves its warp's staging alone.
// bfloat16 (64, 2048, 28, 28) over (0, 2, 3) took 102.3 µs with 32 lanes, 119.7 with 16 and
// 130.7 with the 8 that whole waves chose (H100); runs of whole leaves (56 x 56, 32 x 32)
// measured within 3% across 8-32 lanes.
template <class Op, class in_t, class out_t>
int TilePlan<Op, in_t, out_t>::lanes_for_short_runs(int X, bool shifted) const {
  const Geometry& g = q.g;
  const int64_t run = g.red.sizes[g.red.ndim - 1];
  if (q.ov.y == 0 && !shifted && lc.vec == 1 && c.step == 1 && g.red.ndim >= 2 &&
      X < tuning::kShortRunFewLanes &&
      (run * int64_t(sizeof(in_t)) < tuning::kShortRunBytes ||
       (run % kCanonLeaf != 0 && run * int64_t(sizeof(in_t)) <= tuning::kPartialLeafRunBytes))) {
    int x = 32;
    while (x > 1 && x > M) x /= 2;
    X = std::max(X, x);
  }
  return X;
}

// One output per thread over several reduced dims (NCHW statistics over (0, 2, 3)): with one
// output lane, outputs of one to two waves of blocks, each of a few rounds, leave the last
// wave partly empty. (32, 512, 28, 28): 512 tiles of 2 rounds on 396 slots, 4 rounds for the
// busiest slot, 94.1 µs; 32 lanes, 16 tiles x 49 one-round splits, 2 rounds: 46.9 µs
// (bfloat16 89.0 -> 42.2). Take the X of least makespan (whole waves of the busiest block:
// no per-call list) where it is at most 3/4 of one lane's; elsewhere the lanes measured within
// a few percent of each other over six NCHW shapes.
template <class Op, class in_t, class out_t>
int TilePlan<Op, in_t, out_t>::lanes_for_whole_waves(int X) {
  if (!(q.ov.y == 0 && lc.vec == 1 && X == 1 && c.step == 1 && q.g.red.ndim >= 2)) return X;
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
  return tuning::kLaneGainDen * best <= tuning::kLaneGainNum * one ? best_x : X;
}

// Columns read 16 bytes per output lane: fewer lanes (down to 8: 128-byte segments) give
// more tiles and fewer splits per tile. Take the X whose estimated makespan is least, then
// the fewest merged nodes per thread, then rows read in whole 128-byte segments (16-bit
// columns read 8 bytes per lane: 16 lanes), then the fewest split nodes written (each
// merged once more): narrow columns (262144, 128) and NHWC statistics 1.25-1.34x faster
// with 8 lanes than with 32, columns (16384, 16384) 1.16x slower (512 tiles of 8 rounds: 1.3
// waves).
// Four lanes (64-byte segments) only when eight already cover every column: (1048576, 32)
// 57.1 µs with 4 against 60.5 with 8 (two tiles, each merging 4 nodes per thread instead
// of one merging 16), while narrow (262144, 128) took 59.1 with 4 against 54.2 with 8.
// The makespan: for 4- and 8-byte inputs, that of split tiles' blocks started in launch
// order (x fastest), each on the first free of `target` slots, so that blocks with fewer
// splits fill the second wave's gaps; otherwise the busiest block's rounds times the waves
// of blocks. Columns (16384, 16384) with 16 lanes took 262.4 µs (768 blocks of 5-6 splits:
// 11 rounds listed, 12 as whole waves) against 268.2 with 32 (384 blocks of 10-11); but
// float16 (16384, 16384) 158.0 with 16 lanes against 154.6 with 32 (one wave), hence whole
// waves for 16-bit inputs. (4096, 4096), one wave at every X: 27.8 µs with 8 lanes x 2 splits
// against 28.3 with 32 x 8; bfloat16 21.7 with 16 x 4, 21.9 with 32 x 8, 23.5 with 8 x 2.
template <class Op, class in_t, class out_t>
int TilePlan<Op, in_t, out_t>::lanes_for_columns(int X) {
  if (!(q.ov.y == 0 && lc.vec > 1)) return X;
  const int fewest = x_columns <= 8 ? 4 : 8;
  const auto whole_segments = [&](int x) { return x * lc.vec * int(sizeof(in_t)) >= 128; };
  // Least first: the makespan, the merged nodes per thread, not reading whole segments, for
  // 4- and 8-byte inputs the blocks launched (each pays its prologue, its split nodes'
  // arrival and its share of the merge: columns (16384, 16384) as 512 x 8 blocks of one round
  // took 257.7 / 246.8 µs eager / graph, as 256 x 3 of 5-6 rounds, the same 11 rounds listed,
  // 255.5 / 244.1), the split nodes written.
  const bool listed = sizeof(in_t) >= 4;
  // 16-bit columns (one round per split, shape) count up to 4 merged nodes per thread as
  // one, so that whole segments decide between such lanes: µs eager, 16 lanes against 8,
  // bfloat16 (32768, 16384) over dim 0 (2 against 1 nodes per thread) 268.4 against 346.5,
  // (32768, 4096) 79.9 against 86.6, (65536, 1024) (4 against 1) 48.5 against 51.0; but
  // (100000, 256) (8 against 2) 29.7 against 26.9, (262144, 128) (16 against 4) 36.9
  // against 33.4.
  const int few_merged = sizeof(in_t) == 2 ? tuning::kColumnsFewMerged16 : 1;
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
  return best_x;
}

// Interleaved leaves at one output per thread (fold_leaves_interleaved): where a tile's X = 4
// .. 32 output lanes are the innermost kept dim, of that size and stride 1, and the innermost
// reduced stride is X (mid dims (A, B, C) over B, C = X, with too few leaves for the column
// kernels' C outputs per thread: (8, 65536, 4), (64, 4096, 8)) from an aligned base, each
// warp's leaves are one run, which it stages whole (canon_kernel<..., kInter = true>; its
// warps check the run, and fold the other leaves element by element). Output lane 1 starts
// one element past lane 0, so the aligned staging's all-lanes test never takes these leaves.
template <class Op, class in_t, class out_t>
void TilePlan<Op, in_t, out_t>::choose_interleaved() {
  const Geometry& g = q.g;
  if (interleaves<in_t>() && lc.vec == 1 && c.per == 1 && c.step == 0 && c.X >= 4 && c.X <= 32 &&
      inner_stride == c.X && q.aligned() && g.kept.ndim >= 1 &&
      g.kept.sizes[g.kept.ndim - 1] == c.X && g.kept.in_strides[g.kept.ndim - 1] == 1) {
    c.step = c.X;
    lc.inter = true;
  }
}

// The latency kernel (kLat: one memory latency per leaf, the splits merged in a cluster) for
// one output per thread and one leaf per round, where every block has an SM of its own.
// Automatic: for reduced elements in runs (rows, full sums), one output lane and the fewest
// leaf lanes (from a warp) that give every output at most one cluster of one-round splits;
// else the planned shape when its splits fit a cluster. Mid dims (8, 65536, 4) over dim 1,
// whose leaves are strided, took 25.4 µs as one output lane against 14.7 planned; (64, 65536)
// over dim 1 in clusters at two blocks per SM 15.9 against 15.5. Not without splits: mid dims
// (1024, 1024, 2) over dim 1, 128 blocks, 8.0 µs in a CUDA graph against 7.8. A forced lat = 1
// takes the forced or planned shape wherever its splits fit.
template <class Op, class in_t, class out_t>
void TilePlan<Op, in_t, out_t>::choose_latency() {
  const CanonOverride& ov = q.ov;
  const bool lat_auto = ov.lat < 0 && !q.forced();
  if (!(q.clusters && (lat_auto || ov.lat > 0) && lc.vec == 1 && c.per == 1)) return;
  int most = canon_max_cluster<Op, in_t, out_t>();
  if constexpr (interleaves<in_t>())
    if (lc.inter) most = std::min(most, canon_max_cluster<Op, in_t, out_t, true>());
  for (int y = 32; lat_auto && c.step == 1 && !lc.lat && y <= kCanonThreads; y *= 2) {
    const int64_t rounds = ceil_div(c.leaves, y);
    if (rounds > most || M * rounds > q.sm_count) continue;
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
             (ov.lat > 0 || (c.splits > 1 && int64_t(lc.grid.x) * lc.grid.y <= q.sm_count));
}

// The planner: the first route that takes the geometry.
template <class Op, class in_t, class out_t>
CanonLaunch plan_canon(const Geometry& g, const in_t* in, int sm_count, const CanonOverride& ov,
                       bool clusters) {
  const CanonQuery<in_t> q{g, in, sm_count, ov, clusters};
  CanonLaunch lc;
  if (route_tile<Op, in_t, out_t>(q, lc) || route_small<Op, in_t, out_t>(q, lc) ||
      route_chunks<Op, in_t, out_t>(q, lc) || route_packed<Op, in_t, out_t>(q, lc) ||
      route_pair<Op, in_t, out_t>(q, lc))
    return lc;
  TilePlan<Op, in_t, out_t>(q, lc).plan();
  return lc;
}

}  // namespace treduce
