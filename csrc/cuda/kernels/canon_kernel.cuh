// canon_kernel.cuh: canon_kernel, the canonical order's general kernel (tiles of X output lanes
// by Y leaf lanes, rounds, splits; see canon_config.cuh). Raw CUDA, nothing from torch.
//
#pragma once
#include "canon_stage.cuh"
#include "canon_tree.cuh"

namespace treduce {

// One leaf of a thread (canon_kernel): its length, and for a leaf inside one run of elements
// cfg.step apart its first element and whether it starts on a 16-byte boundary with a whole
// number of vectors.
template <class in_t>
struct LeafAt {
  const in_t* p;
  int n;
  bool in_run, vec;
};

// A whole leaf of one output lane that crosses from one run of the innermost reduced dim (`run`
// elements, at least a leaf, stride 1) into the next: NCHW statistics whose H x W is not a
// multiple of kCanonLeaf, such as (32, 512, 28, 28). Its elements are two contiguous pieces, the
// last n0 of one run and the first kCanonLeaf - n0 of the next. Where both start on a 16-byte
// boundary and n0 is whole vectors, all of the leaf's vectors are loaded in one batch and folded
// in order: the same additions as fold_leaf, whose element walk takes eight loads at a time,
// eight memory latencies for a leaf that the block's tree waits for (here one per eight
// vectors, as fold_leaf_vec). Returns false, having folded nothing, otherwise. Inline: out of
// line, the call's register saves put 200-400 local-memory instructions into each caller.
template <class Op, class in_t>
__device__ __forceinline__ bool fold_leaf_two_runs(const in_t* p, const IndexMap& red, int64_t r0,
                                                   int64_t run, typename Op::acc_t& a, bool ef) {
  constexpr int V = vec_width<in_t>();
  constexpr int kVecs = kCanonLeaf / V;
  constexpr int kBatch = kVecs < 8 ? kVecs : 8;  // fold_leaf_vec's loads in flight
  using VecT = Vec<in_t, V>;
  const int n0 = static_cast<int>(run - r0 % run);  // 1 .. kCanonLeaf - 1
  const in_t* const p0 = p + red.in_offset(r0);
  const in_t* const p1 = p + red.in_offset(r0 + n0) - n0;  // p1 + r: element r of the leaf
  if (n0 % V != 0 ||
      ((reinterpret_cast<uintptr_t>(p0) | reinterpret_cast<uintptr_t>(p1)) & 15) != 0)
    return false;
#pragma unroll
  for (int b = 0; b < kVecs; b += kBatch) {
    VecT x[kBatch];
    const uint64_t pol = load_policy<VecT>(ef);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int r = (b + u) * V;
      x[u] = load_in(reinterpret_cast<const VecT*>((r < n0 ? p0 : p1) + r), pol);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
#pragma unroll
      for (int e = 0; e < V; ++e) a = fold<Op>(a, x[u].v[e]);
  }
  return true;
}

// What canon_kernel's leaf loaders read of one output lane in one work item: its elements from
// the first (p; active: the lane lies inside the output), the reduced length K, the innermost
// reduced dim's size `run` (stride cfg.step if > 0), the tile's width X, the thread's lane and its
// warp's row of the stage.
template <class in_t>
struct CanonLane {
  const in_t* p;
  bool active;
  int64_t K, run;
  int X, lane;
  Vec<in_t, LeafStage<in_t>::V>* stage;
};

// Leaf q's length: 0 past the output's end or for an inactive output lane.
template <class in_t>
__device__ __forceinline__ int canon_leaf_len(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                              int64_t q) {
  const int64_t r0 = q * kCanonLeaf;
  return !t.active || q >= cfg.leaves
             ? 0
             : static_cast<int>(t.K - r0 < kCanonLeaf ? t.K - r0 : kCanonLeaf);
}

// Leaf q, and for a leaf inside one run of elements cfg.step apart its address and whether it is
// aligned (then the leaf spans n * step memory elements).
template <class in_t>
__device__ __forceinline__ LeafAt<in_t> locate_leaf(const CanonLane<in_t>& t,
                                                    const CanonConfig& cfg, const Geometry& g,
                                                    int64_t q) {
  LeafAt<in_t> l{t.p, canon_leaf_len(t, cfg, q), false, false};
  const int64_t r0 = q * kCanonLeaf;
  if (cfg.step > 0 && l.n > 0 && (g.red.ndim == 1 || (r0 % t.run) + l.n <= t.run)) {
    l.in_run = true;
    l.p = t.p + (g.red.ndim == 1 ? r0 * cfg.step : g.red.in_offset(r0));
    l.vec = (reinterpret_cast<uintptr_t>(l.p) & 15) == 0 && l.n * cfg.step % vec_width<in_t>() == 0;
  }
  return l;
}

// fold_leaves_shifted for the kernels that have it (kShifted: 16-bit inputs): the warp's kL
// leaves per lane from `lp`, whole (every lane's `whole`) and shifted alike; false if it did not
// fold. The warp's lanes are min(X, 32) runs, one per output lane.
template <class Op, class in_t, bool kShifted, int kL>
__device__ __forceinline__ bool fold_shifted(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                             const in_t* lp, bool whole,
                                             typename Op::acc_t (&b)[kL]) {
  if constexpr (kShifted) {
    const int log_g = 31 - __clz(min(cfg.X, 32));
    return cfg.step == 1 && fold_leaves_shifted<Op, in_t, kL>(lp, whole, log_g, t.stage, b);
  } else {
    return false;
  }
}

// Whether the warp's leaves are interleaved (fold_leaves_interleaved): cfg.step = X (4 .. 32),
// every lane's leaf whole and in its run, lane l's kCanonLeaf X (l / X) + l % X elements past
// lane 0's, which starts on a 16-byte boundary. Warp-uniform; every lane must call it.
template <class in_t>
__device__ __forceinline__ bool leaves_interleaved(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                                   const LeafAt<in_t>& l) {
  const int X = t.X;
  if (cfg.step < 4 || cfg.step != X || X > 32) return false;
  const in_t* const p0 = shfl_ptr(l.p, 0);
  return __all_sync(kFullMask,
                    l.in_run && l.n == kCanonLeaf &&
                        l.p == p0 + (t.lane / X) * (kCanonLeaf * X) + (t.lane & (X - 1))) &&
         (reinterpret_cast<uintptr_t>(p0) & 15) == 0;
}

// fold_leaves_staged_short_runs where the innermost reduced dim's runs are shorter than a leaf,
// or are not whole 16-byte vectors, so that fold_leaf_two_runs's pieces are not aligned for every
// leaf (bfloat16 runs of 196: 392 bytes) (one outer reduced dim): lane l's leaf lane 0's plus
// (l / X) * kPer leaves, of output lane l % X, whose elements start (l % X) * s_out past output
// lane 0's; every leaf whole, or else (an output's last leaves: the latency kernel's one warp
// over a small output, such as bfloat16 (4, 3, 10, 10)) ragged, each lane's leaf of its own
// length, 0 past the last. False if it did not fold. Warp-uniform; every lane must call it.
template <class Op, class in_t, int kPer>
__device__ __forceinline__ bool fold_short_runs(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                                const Geometry& g, int64_t q, int n,
                                                typename Op::acc_t& b) {
  const int X = t.X, lane = t.lane;
  if (cfg.step != 1 || g.red.ndim != 2 ||
      (t.run >= kCanonLeaf && t.run * int64_t(sizeof(in_t)) % 16 == 0))
    return false;
  const in_t* const p0 = shfl_ptr(t.p, 0);
  const int64_t s_out = shfl_ptr(t.p, X > 1 ? 1 : 0) - p0;
  const int64_t q0 = __shfl_sync(kFullMask, q, 0);
  if (!__all_sync(kFullMask, t.p == p0 + (lane & (X - 1)) * s_out && q == q0 + (lane / X) * kPer) ||
      !__any_sync(kFullMask, n > 0))
    return false;
  float* const st = reinterpret_cast<float*>(t.stage);
  if (__all_sync(kFullMask, n == kCanonLeaf)) {
    fold_leaves_staged_short_runs<Op>(p0, s_out, X, q0, kPer, g.red, lane, st, b);
    return true;
  }
  // Ragged only at one leaf per thread: at two, its copy spilled (local memory 58 -> 134).
  if constexpr (kPer == 1) {
    fold_leaves_staged_short_runs<Op, true>(p0, s_out, X, q0, kPer, g.red, lane, st, b, n);
    return true;
  }
  return false;
}

// Two leaves per thread (leaves q and q + 1: their node of the tree, into a), side by side when
// the warp's 64 leaves are aligned runs of one length (a multiple of half a piece: each phase
// stages half a piece of each) and each lane's two are contiguous: two independent chains of
// dependent additions instead of one after the other; or, whole and contiguous, every lane's
// starting the same number of elements past a 16-byte boundary (a view such as x[1:]), shifted.
// False if it folded neither way (the caller folds them one at a time).
template <class Op, class in_t, bool kShifted>
__device__ __forceinline__ bool fold_leaf_pair(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                               const Geometry& g, int64_t q,
                                               typename Op::acc_t& a) {
  using acc_t = typename Op::acc_t;
  const LeafAt<in_t> l0 = locate_leaf(t, cfg, g, q), l1 = locate_leaf(t, cfg, g, q + 1);
  const int n0 = __shfl_sync(kFullMask, l0.n, 0);
  acc_t b[2] = {Op::identity(), Op::identity()};
  if (__all_sync(kFullMask,
                 l0.vec && l1.vec && l0.n == n0 && l1.n == n0 && l1.p == l0.p + n0 * cfg.step) &&
      n0 * cfg.step % (LeafStage<in_t>::kPiece / 2) == 0) {
    if (cfg.step == 1)
      fold_leaf_staged<Op, in_t, 1, 2>(l0.p, n0, t.lane, t.stage, b, g.evict_first);
    else
      fold_leaf_staged<Op, in_t, 2, 2>(l0.p, 2 * n0, t.lane, t.stage, b, g.evict_first);
  } else if (!fold_shifted<Op, in_t, kShifted>(t, cfg, l0.p,
                                               l0.in_run && l1.in_run && l0.n == kCanonLeaf &&
                                                   l1.n == kCanonLeaf && l1.p == l0.p + kCanonLeaf,
                                               b)) {
    return false;
  }
  a = Op::combine(b[0], b[1]);
  return true;
}

// Leaf q of one output lane (kVec = 1), folded in order into b by the first loader that takes it:
// a warp whose 32 leaves are aligned runs of one length (a multiple of a piece) stages them; then
// shifted 16-bit leaves, unaligned whole leaves, short runs, one aligned run in vectors, a whole
// leaf across two runs, and the element walk. kPh and kVecBatch: the latency kernel's loads in
// flight (canon_kernel).
template <class Op, class in_t, int kPer, int kPh, int kVecBatch>
__device__ __forceinline__ void fold_output_leaf(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                                 const Geometry& g, int64_t q,
                                                 typename Op::acc_t (&b)[1]) {
  constexpr bool kStageUnaligned = stages_unaligned<Op, in_t>();   // fold_leaf_staged_unaligned
  constexpr bool kShifted = kStageUnaligned && sizeof(in_t) == 2;  // fold_leaves_shifted
  const LeafAt<in_t> l = locate_leaf(t, cfg, g, q);
  const int n = l.n;
  const int n0 = __shfl_sync(kFullMask, n, 0);
  // A step of 2: a leaf one element past a 16-byte boundary is the odd elements of the aligned
  // run that starts one element before it (its even neighbour's: C = 2 mid dims), which stays
  // inside that 16-byte segment.
  const bool odd = cfg.step == 2 && l.in_run && n * 2 % vec_width<in_t>() == 0 &&
                   (reinterpret_cast<uintptr_t>(l.p) & 15) == sizeof(in_t);
  if (__all_sync(kFullMask, (l.vec || odd) && n == n0) &&
      n0 * cfg.step % LeafStage<in_t>::kPiece == 0) {
    if (cfg.step == 1)
      fold_leaf_staged<Op, in_t, 1, 1, kPh>(l.p, n0, t.lane, t.stage, b, g.evict_first);
    else
      fold_leaf_staged<Op, in_t, 2>(odd ? l.p - 1 : l.p, 2 * n0, t.lane, t.stage, b, g.evict_first,
                                    odd);
  } else if (fold_shifted<Op, in_t, kShifted>(t, cfg, l.p, l.in_run && n == kCanonLeaf, b)) {
    // Whole 16-bit leaves, every lane's the same number of elements past a 16-byte boundary.
  } else if (kStageUnaligned && cfg.step == 1 &&
             __all_sync(kFullMask, l.in_run && n == kCanonLeaf)) {
    // Whole leaves, not 16-byte aligned (the condition is warp-uniform, so every lane enters:
    // the function shuffles), kPer * kCanonLeaf elements apart or anywhere.
    fold_leaf_staged_unaligned<Op>(l.p, kPer * kCanonLeaf, t.lane,
                                   reinterpret_cast<float*>(t.stage), b[0]);
  } else if (kStageUnaligned && fold_short_runs<Op, in_t, kPer>(t, cfg, g, q, n, b[0])) {
    // Whole leaves over runs shorter than a leaf or of unaligned length: staged.
  } else if (l.vec && cfg.step == 1) {
    fold_leaf_vec<Op, in_t, kVecBatch>(l.p, n, b[0], g.evict_first);
  } else if (n > 0) {
    // A whole leaf across two runs of 16-byte aligned pieces: one batch of loads.
    bool two = false;
    if constexpr (sizeof(in_t) <= 4) {
      const int64_t r0 = q * kCanonLeaf;
      if (cfg.step == 1 && n == kCanonLeaf && g.red.ndim > 1 && t.run >= kCanonLeaf &&
          r0 % t.run + kCanonLeaf > t.run)
        two = fold_leaf_two_runs<Op, in_t>(t.p, g.red, r0, t.run, b[0], g.evict_first);
    }
    if (!two) fold_leaf<Op, in_t, 1>(t.p, g.red, cfg.one, q * kCanonLeaf, n, b, g.evict_first);
  }
}

// Leaf q of kVec outputs side by side (columns). A warp whose 32 leaves are whole, each one
// 16-byte aligned run of 64 rows of exactly its kVec outputs (cfg.step = kVec: C = 2 or 4 mid
// dims, two columns), stages them (kStage: one lane's leaf per row of the stage, as for rows);
// otherwise the element walk (one_round: the item's only round).
template <class Op, class in_t, int kVec, bool kStage>
__device__ __forceinline__ void fold_column_leaf(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                                 const Geometry& g, int64_t q,
                                                 typename Op::acc_t (&b)[kVec], bool one_round) {
  const int n = canon_leaf_len(t, cfg, q);
  const int64_t r0 = q * kCanonLeaf;
  if constexpr (kStage) {
    const in_t* lp = t.p + (g.red.ndim == 1 ? r0 * kVec : g.red.in_offset(r0));
    if (__all_sync(kFullMask, cfg.step == kVec && n == kCanonLeaf &&
                                  (g.red.ndim == 1 || r0 % t.run + n <= t.run) &&
                                  (reinterpret_cast<uintptr_t>(lp) & 15) == 0)) {
      fold_leaf_staged<Op, in_t, kVec, 1, 1, kVec>(lp, kCanonLeaf * kVec, t.lane, t.stage, b,
                                                   g.evict_first);
      return;
    }
  }
  if (n > 0) fold_leaf<Op, in_t, kVec>(t.p, g.red, cfg.one, r0, n, b, g.evict_first, one_round);
}

// A thread's leaf q of canon_kernel<Op, in_t, out_t, kVec, kPer, kLat, kStage, kInter> into b:
// kInter, the warp's leaves 32 / X whole ones of X interleaved outputs of one run (otherwise, a
// partial leaf or a run's end, element by element); kVec = 1, one output's leaf; else columns.
template <class Op, class in_t, int kVec, int kPer, bool kLat, bool kStage, bool kInter>
__device__ __forceinline__ void fold_thread_leaf(const CanonLane<in_t>& t, const CanonConfig& cfg,
                                                 const Geometry& g, int64_t q,
                                                 typename Op::acc_t (&b)[kVec], bool one_round) {
  constexpr int kPh = kLat ? 2 : 1;         // fold_leaf_staged's phases in flight
  constexpr int kVecBatch = kLat ? 16 : 8;  // fold_leaf_vec's loads in flight
  if constexpr (kInter) {
    const LeafAt<in_t> l = locate_leaf(t, cfg, g, q);
    if (leaves_interleaved(t, cfg, l))
      fold_leaves_interleaved<Op, in_t, kPh>(shfl_ptr(l.p, 0), t.X, t.lane, t.stage, b[0],
                                             g.evict_first);
    else if (l.n > 0)
      fold_leaf<Op, in_t, 1>(t.p, g.red, cfg.one, q * kCanonLeaf, l.n, b, g.evict_first);
  } else if constexpr (kVec == 1) {
    fold_output_leaf<Op, in_t, kPer, kPh, kVecBatch>(t, cfg, g, q, b);
  } else {
    fold_column_leaf<Op, in_t, kVec, kStage>(t, cfg, g, q, b, one_round);
  }
}

// The round counter's levels of output v for counter_push_all/counter_result_all. One float
// output per thread (kSmem) keeps its low levels in shared memory, the accessor built where it is
// used from a fresh read of the thread index, so that none of it stays live across the rounds'
// loop. Columns (kVec > 1) and double sums keep their counters in local memory: the accessor cost
// them spills inside that loop (reloads at every round).
template <class acc_t, int kVec, bool kSmem>
struct CanonRoundLevels {
  acc_t (*round_sm)[kSmem ? 32 : 1];
  acc_t (*levels)[kCanonLevels];
  int X;
  __device__ __forceinline__ auto operator()(int v) const {
    if constexpr (kSmem) {
      unsigned t;
      asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
      const int x = static_cast<int>(t) & (X - 1);
      return RoundLevels<acc_t, 32>{round_sm, x & 31, x < 32, levels[v]};
    } else {
      return LocalLevels<acc_t>{levels[v]};
    }
  }
};

// The kVec outputs from output o on, finalised, to their places.
template <class Op, class out_t, int kVec>
__device__ __forceinline__ void store_outputs(out_t* __restrict__ out, const Geometry& g, int64_t o,
                                              const typename Op::acc_t (&r)[kVec]) {
#pragma unroll
  for (int v = 0; v < kVec; ++v)
    out[g.kept.out_offset(o + v)] =
        from_acc<out_t>(Op::finalize(r[v], g.reduce_len, g.num_outputs));
}

// Resident blocks per SM that canon_kernel is compiled for (at most 64 registers for four, 80
// for three): the latency kernel two; column kernels (kVec outputs per thread) four, except
// float32 quads, whose loop spills at 64 registers and measured slower with four ((2097152, 32)
// over dim 0: 87.5 -> 92.5 µs); the rest three.
template <class in_t>
constexpr int canon_min_blocks(int vec, bool lat) {
  return lat ? 2 : vec > 1 && !(sizeof(in_t) == 4 && vec == 4) ? 4 : 3;
}

// The end of a work item for the row of threads ty = 0, whose a[] is the node of split `split`
// of tile `tile`: the latency kernel's splits store it into the cluster's first block; other
// splits leave it among the tile's split nodes in partials ([split][column], so that the stores
// and the final merge's loads are coalesced); a tile without splits stores its outputs.
template <class Op, class out_t, int kVec, bool kLat>
__device__ __forceinline__ void leave_item_node(const typename Op::acc_t (&a)[kVec], int64_t tile,
                                                int split, int64_t o0, bool active, int ty, int col,
                                                const Geometry& g, const CanonConfig& cfg,
                                                out_t* __restrict__ out,
                                                typename Op::acc_t* __restrict__ partials,
                                                typename Op::acc_t* cluster_nodes,
                                                uint64_t* cluster_bar) {
  if (kLat && cfg.splits > 1) {
    cluster_wait();  // every block of the cluster has started (every thread takes part)
    if (ty == 0) {
      if (split == 0)               // (the cluster's rank: gridDim.y = splits = the cluster's size)
        cluster_nodes[col] = a[0];  // read back by this same thread
      else
        cluster_store_async(&cluster_nodes[split * cfg.X + col], a[0], cluster_bar, 0);
    }
  } else if (cfg.splits > 1) {
    if (ty == 0) {
      const int tile_cols = cfg.X * kVec;
      typename Op::acc_t* slots = partials + tile * tile_cols * cfg.splits;
#pragma unroll
      for (int v = 0; v < kVec; ++v) slots[int64_t(split) * tile_cols + col + v] = a[v];
    }
  } else if (ty == 0 && active) {
    store_outputs<Op, out_t, kVec>(out, g, o0, a);
  }
}

// The end of a block that took splits. The latency kernel: the tile's splits are the cluster's
// blocks; once every node is in the first block's shared memory, that block merges them by the
// tree over the split index (node ty of output lane tx in thread ty * X + tx; missing nodes are
// the identity), while the other blocks are done (their stores complete on the first block's
// mbarrier). Otherwise the block's splits were all of tile blockIdx.x: one arrival for all of
// them (an arrival per split measured 1-8% of full sums' time, more the shorter the splits); the
// last block merges the tile's nodes (merge_tile_splits, out of line).
template <class Op, class out_t, int kVec, bool kLat>
__device__ __forceinline__ void merge_block_splits(const Geometry& g, const CanonConfig& cfg,
                                                   out_t* __restrict__ out,
                                                   typename Op::acc_t* __restrict__ partials,
                                                   unsigned* __restrict__ counters,
                                                   typename Op::acc_t* cluster_nodes,
                                                   uint64_t* cluster_bar, typename Op::acc_t* sm,
                                                   uint4* stage, int tid) {
  using acc_t = typename Op::acc_t;
  const int X = cfg.X, tx = tid & (X - 1), ty = tid / X;
  if constexpr (kLat) {
    if (cluster_rank() != 0) return;
    acc_t a[1] = {merge_cluster_nodes<Op, acc_t>(
        [&] { return ty < cfg.splits ? cluster_nodes[tid] : Op::identity(); }, cluster_bar,
        cfg.splits, X, tid, sm)};
    const int64_t o0 = int64_t(blockIdx.x) * X + tx;
    if (ty == 0 && o0 < g.num_outputs) store_outputs<Op, out_t, 1>(out, g, o0, a);
  } else {
    const unsigned left = (cfg.splits - 1 - blockIdx.y) / gridDim.y + 1;  // splits it took
    const Merged<acc_t, kVec> m = merge_tile_splits<Op, kVec>(
        partials + int64_t(blockIdx.x) * X * kVec * cfg.splits, &counters[blockIdx.x], left,
        cfg.splits, cfg.merge_per_thread, X, cfg.Y, sm, stage);
    const int64_t o0 = (int64_t(blockIdx.x) * X + tx) * kVec;
    if (m.last && ty == 0 && o0 < g.num_outputs) store_outputs<Op, out_t, kVec>(out, g, o0, m.a);
  }
}

// canon_min_blocks(kVec, kLat) resident blocks per SM (above) keep enough loads in flight.
//
// kStage (kVec > 1): columns whose reduced element's row is exactly a thread's kVec outputs
// (cfg.step = kVec) stage each warp's whole, aligned leaves (fold_leaf_staged with kCols =
// kVec); a template flag, so that the column kernels without it keep their code (the staging's
// branch inlined in them moved their allocation: columns (4096, 4096) and float64 columns 1.5-3%
// slower).
//
// kLat: the latency kernel, for launches of at most about one wave (small full sums, long rows;
// the host chooses it, plan_canon.cuh): a block may be X * Y < kCanonThreads threads, a staged
// leaf's two phases are loaded together and a lone lane's leaf in batches of sixteen (one memory
// latency per leaf instead of two), and the splits of a tile are the blocks of one thread-block
// cluster (gridDim.y = splits <= 16, one split each, splits <= Y, splits * X <= kClusterSlots;
// 64 slots fit, but took (8, 65536, 4)'s 16 splits of 4 lanes there, 0.6 µs slower in a CUDA
// graph): each block stores its node into the shared memory of the cluster's first block
// (st.async), which waits for their bytes on an mbarrier and merges them, in place of the
// partials in global memory and the atomic arrival (merge_tile_splits). The same nodes and the
// same tree: the bits do not change.
//
// Work items: (tile, split) pairs. Without splits, blocks stride over the tiles; with them, each
// tile has gridDim.y blocks that take its splits in turn (a block handles splits y,
// y + gridDim.y, ...: splits are small powers of two of rounds, so that every block gets nearly
// the same work, and neighbouring blocks read neighbouring memory).
template <class Op, class in_t, class out_t, int kVec, int kPer = 1, bool kLat = false,
          bool kStage = false, bool kInter = false>
__global__ void __launch_bounds__(kCanonThreads, canon_min_blocks<in_t>(kVec, kLat))
    canon_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                 const CanonConfig cfg, typename Op::acc_t* __restrict__ partials,
                 unsigned* __restrict__ counters) {
  static_assert(!kLat || (kVec == 1 && kPer == 1), "the latency kernel: one leaf, one output");
  static_assert(!kStage || canon_stage_fits<Op>(kVec), "the column staging");
  static_assert(!kInter || (kVec == 1 && kPer == 1 && interleaves<in_t>()),
                "interleaved leaves: one leaf, one output");
  static_assert(kPer == 1 || kVec == 1, "two leaves per thread only for one output");
  using acc_t = typename Op::acc_t;
  using Stage = LeafStage<in_t>;
  __shared__ acc_t sm[kCanonThreads * kVec];
  // kLat: the split nodes of the cluster, [split][output lane], in its first block, then that
  // block's mbarrier, which counts their bytes.
  __shared__ __align__(16) acc_t cluster_nodes[kLat ? kClusterSlots + 16 / sizeof(acc_t) : 1];
  uint64_t* const cluster_bar = reinterpret_cast<uint64_t*>(cluster_nodes + kClusterSlots);
  if constexpr (kLat) {
    if (cfg.splits > 1) cluster_merge_start(cluster_bar, cluster_rank() == 0);
  }
  __shared__ Vec<in_t, Stage::V> stage[kCanonThreads / 32][Stage::kStageVecs];
  constexpr bool kSmemRounds = kVec == 1 && sizeof(acc_t) <= 8;  // CanonRoundLevels
  __shared__ acc_t round_sm[kCanonSmemLevels][kSmemRounds ? 32 : 1];
  acc_t levels[kVec][kCanonLevels];  // local memory: the round counter's upper levels
  const CanonRoundLevels<acc_t, kVec, kSmemRounds> round_levels{round_sm, levels, cfg.X};
  const int tid = threadIdx.x;
  const int X = cfg.X, Y = cfg.Y;
  const int tx = tid & (X - 1), ty = tid / X;
  const int64_t M = g.num_outputs;
  const int64_t items = cfg.splits > 1 ? cfg.splits : cfg.tiles;
  for (int64_t item = cfg.splits > 1 ? blockIdx.y : blockIdx.x; item < items;
       item += cfg.splits > 1 ? gridDim.y : gridDim.x) {
    const int64_t tile = cfg.splits > 1 ? blockIdx.x : item;
    const int split = cfg.splits > 1 ? static_cast<int>(item) : 0;
    const int64_t k0 = split * cfg.rounds_per_split;
    const int64_t k1 =
        k0 + cfg.rounds_per_split < cfg.rounds ? k0 + cfg.rounds_per_split : cfg.rounds;
    const int64_t o0 = (tile * X + tx) * kVec;  // M % kVec == 0 when kVec > 1
    const bool active = o0 < M;
    const CanonLane<in_t> t{in + (active ? g.kept.in_offset(o0) : 0),
                            active,
                            g.reduce_len,
                            g.red.sizes[g.red.ndim - 1],
                            X,
                            tid & 31,
                            stage[tid >> 5]};
    acc_t a[kVec];
    for (int64_t k = k0; k < k1; ++k) {  // block-uniform bounds: tree_over_y synchronises
      // This thread's kPer (= cfg.per) adjacent leaves (2: leaves 2q and 2q + 1, merged first:
      // their node of the tree), each folded in order.
      bool paired = false;
      if constexpr (kPer == 2)
        paired = fold_leaf_pair < Op, in_t,
        stages_unaligned<Op, in_t>() && sizeof(in_t) == 2 > (t, cfg, g, (k * Y + ty) * 2, a[0]);
#pragma unroll 1
      for (int j = 0; j < (paired ? 0 : kPer); ++j) {
        acc_t b[kVec];
#pragma unroll
        for (int v = 0; v < kVec; ++v) b[v] = Op::identity();
        fold_thread_leaf<Op, in_t, kVec, kPer, kLat, kStage, kInter>(
            t, cfg, g, (k * Y + ty) * kPer + j, b, k1 - k0 == 1);
#pragma unroll
        for (int v = 0; v < kVec; ++v) a[v] = j == 0 ? b[v] : Op::combine(a[v], b[v]);
      }
      tree_over_y<Op, kVec>(a, X, Y, tid, sm);
      if (ty == 0 && k1 - k0 > 1)  // one round: its node is the split's node
        counter_push_all<Op, kVec>(round_levels, a, k - k0);
    }
    if (ty == 0 && k1 - k0 > 1) counter_result_all<Op, kVec>(round_levels, a, k1 - k0);
    leave_item_node<Op, out_t, kVec, kLat>(a, tile, split, o0, active, ty, tx * kVec, g, cfg, out,
                                           partials, cluster_nodes, cluster_bar);
  }
  if (cfg.splits > 1)
    merge_block_splits<Op, out_t, kVec, kLat>(g, cfg, out, partials, counters, cluster_nodes,
                                              cluster_bar, sm,
                                              reinterpret_cast<uint4*>(stage[tid >> 5]), tid);
}

}  // namespace treduce
