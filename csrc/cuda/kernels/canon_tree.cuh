// canon_tree.cuh: how leaf nodes meet in the canonical tree: the tree over a block's leaf
// lanes, cluster merges, the binary counters that merge rounds, and the merge of a tile's
// split nodes by its last block. Raw CUDA, nothing from torch.
//
#pragma once
#include "canon_fold.cuh"

namespace treduce {

// The perfect tree over the Y leaf lanes of each output lane: level s merges ty and ty + s for
// ty a multiple of 2s. Lanes of one warp merge by shuffles, the rest through `sm`
// (kCanonThreads * kVec slots). Every thread of the block must call it; thread ty = 0 gets the
// node.
template <class Op, int kVec, class acc_t>
__device__ __forceinline__ void tree_over_y(acc_t (&a)[kVec], int X, int Y, int tid, acc_t* sm) {
  const int ty = tid / X;
  int s = 1;
  for (; s < Y && s * X < 32; s <<= 1) {
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const acc_t o = shfl_down(a[v], s * X, 32);
      if ((ty & (2 * s - 1)) == 0) a[v] = Op::combine(a[v], o);
    }
  }
  if (s >= Y) return;
  __syncthreads();  // earlier readers of sm are done
  if ((ty & (s - 1)) == 0) {
#pragma unroll
    for (int v = 0; v < kVec; ++v) sm[tid * kVec + v] = a[v];
  }
  __syncthreads();
  for (; s < Y; s <<= 1) {
    if ((ty & (2 * s - 1)) == 0) {
#pragma unroll
      for (int v = 0; v < kVec; ++v)
        sm[tid * kVec + v] = Op::combine(sm[tid * kVec + v], sm[(tid + s * X) * kVec + v]);
    }
    __syncthreads();
  }
  if (ty == 0) {
#pragma unroll
    for (int v = 0; v < kVec; ++v) a[v] = sm[tid * kVec + v];
  }
}

// tree_over_y for one output lane (X = 1) of Y = blockDim.x leaf lanes (a power of two up to
// kCanonThreads): the same perfect tree, the same additions in the same order, but the levels
// across warps are thread 0's alone, from the warps' nodes in `sm`, in registers: two barriers
// instead of 2 + log2(Y / 32). Every thread of the block must call it; thread 0 gets the node.
template <class Op, class acc_t>
__device__ __forceinline__ acc_t tree_over_block(acc_t a, int Y, int tid, acc_t* sm) {
  for (int s = 1; s < Y && s < 32; s <<= 1) {
    const acc_t o = shfl_down(a, s, 32);
    if ((tid & (2 * s - 1)) == 0) a = Op::combine(a, o);
  }
  if (Y <= 32) return a;
  __syncthreads();  // earlier readers of sm are done
  if ((tid & 31) == 0) sm[tid >> 5] = a;
  __syncthreads();
  if (tid == 0) {
    constexpr int kW = kCanonThreads / 32;
    const int W = Y >> 5;  // 2 .. kW warps
    acc_t v[kW];
#pragma unroll
    for (int w = 0; w < kW; ++w) v[w] = w < W ? sm[w] : Op::identity();
#pragma unroll
    for (int s = 1; s < kW; s <<= 1)
#pragma unroll
      for (int w = 0; w + s < kW; w += 2 * s)
        if (w + s < W) v[w] = Op::combine(v[w], v[w + s]);
    a = v[0];
  }
  return a;
}

// A cluster merge's start, in every thread of every block of the cluster, before any block
// stores into another's shared memory: the first block (`first`) makes the mbarrier `bar` that
// will count the nodes' bytes, and each block arrives at the cluster barrier (relaxed: it has
// started, and the first block's mbarrier exists); the stores wait for it with cluster_wait.
__device__ __forceinline__ void cluster_merge_start(uint64_t* bar, bool first) {
  if (threadIdx.x == 0 && first) cluster_bar_init(bar, 1);
  cluster_arrive_relaxed();
}

// A cluster merge's end, in the first block: waits for the other n - 1 blocks' X nodes each
// (st.async into its shared memory, counted on `bar`), then merges node ty of output lane tx
// (node() in thread ty * X + tx: the node there, or the identity past n) by the perfect tree
// over ty; thread tx gets output lane tx's result. The latency kernel's splits and
// canon_small_kernel's clustered chunks.
template <class Op, class acc_t, class Node>
__device__ __forceinline__ acc_t merge_cluster_nodes(Node node, uint64_t* bar, int n, int X,
                                                     int tid, acc_t* sm) {
  if (threadIdx.x == 0) cluster_bar_expect(bar, static_cast<unsigned>((n - 1) * X * sizeof(acc_t)));
  cluster_bar_wait(bar, 0);
  acc_t a[1] = {node()};
  int ym = 1;
  while (ym < n) ym <<= 1;
  tree_over_y<Op, 1>(a, X, ym, tid, sm);
  return a[0];
}

// Binary counter over one column's nodes: push the count-th node (count = nodes pushed before),
// merging it with every completed node of equal height. `levels` stores the levels (get, set):
// LocalLevels or RoundLevels.
template <class Op, class Levels, class acc_t>
__device__ __forceinline__ void counter_push(const Levels& levels, acc_t x, int64_t count) {
  int l = 0;
  for (; count & 1; count >>= 1, ++l) x = Op::combine(levels.get(l), x);
  levels.set(l, x);
}

// The counter's value after `count` pushes: the completed nodes, merged from the smallest (the
// latest) up, which is the perfect tree with the missing nodes as the identity.
template <class Op, class Levels>
__device__ __forceinline__ typename Op::acc_t counter_result(const Levels& levels, int64_t count) {
  using acc_t = typename Op::acc_t;
  acc_t r = Op::identity();
  bool any = false;
  for (int l = 0; l < kCanonLevels; ++l) {
    if (!((count >> l) & 1)) continue;
    r = any ? Op::combine(levels.get(l), r) : levels.get(l);
    any = true;
  }
  return r;
}

// counter_push and counter_result for kVec outputs at once, levels(v) being output v's levels:
// the same additions, with each level's kVec loads issued together, so that a push waits for one
// load per level instead of kVec in turn. counter_result_all needs count > 0:
// it leaves r[] as it is for none, where counter_result gives the identity. (merge_tile_splits
// keeps the one-output forms: rewriting those as kVec = 1 of these moved its SASS, which only an
// H200 run of the suite can clear.)
template <class Op, int kVec, class LevelsOf, class acc_t>
__device__ __forceinline__ void counter_push_all(LevelsOf&& levels, const acc_t (&node)[kVec],
                                                 int64_t count) {
  acc_t x[kVec];
#pragma unroll
  for (int v = 0; v < kVec; ++v) x[v] = node[v];
  int l = 0;
  for (; count & 1; count >>= 1, ++l) {
    acc_t y[kVec];
#pragma unroll
    for (int v = 0; v < kVec; ++v) y[v] = levels(v).get(l);
#pragma unroll
    for (int v = 0; v < kVec; ++v) x[v] = Op::combine(y[v], x[v]);
  }
#pragma unroll
  for (int v = 0; v < kVec; ++v) levels(v).set(l, x[v]);
}
template <class Op, int kVec, class LevelsOf, class acc_t>
__device__ __forceinline__ void counter_result_all(LevelsOf&& levels, acc_t (&r)[kVec],
                                                   int64_t count) {
  bool any = false;
  for (int l = 0; l < kCanonLevels; ++l) {
    if (!((count >> l) & 1)) continue;
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const acc_t y = levels(v).get(l);
      r[v] = any ? Op::combine(y, r[v]) : y;
    }
    any = true;
  }
}

// A counter in the thread's local memory (the final merge's).
template <class acc_t>
struct LocalLevels {
  acc_t* p;  // kCanonLevels levels
  __device__ __forceinline__ acc_t get(int l) const { return p[l]; }
  __device__ __forceinline__ void set(int l, acc_t x) const { p[l] = x; }
};

// The per-round counter of one output column (thread ty = 0, output v): its low levels, which
// every push touches, in shared memory (kCanonSmemLevels rows of 32 slots, slot tx; output
// lanes tx < 32 only: every automatic configuration that takes more than one round per split
// has X = 1), the rest in local memory (canon_kernel uses it for one float output per thread).
// Local memory alone measured 5% slower on full sums: the streamed loads evict its lines from
// L1, so each push waited on L2 while the block's other warps waited at the next round's barrier.
constexpr int kCanonSmemLevels = 6;  // splits of up to 32 rounds stay in shared memory
template <class acc_t, int kSlots>
struct RoundLevels {
  acc_t (*sm)[kSlots];  // the block's [kCanonSmemLevels][kSlots] array
  int slot;
  bool in_sm;    // tx < 32
  acc_t* local;  // kCanonLevels levels (the low ones unused when in_sm)
  __device__ __forceinline__ acc_t get(int l) const {
    return in_sm && l < kCanonSmemLevels ? sm[l][slot] : local[l];
  }
  __device__ __forceinline__ void set(int l, acc_t x) const {
    if (in_sm && l < kCanonSmemLevels)
      sm[l][slot] = x;
    else
      local[l] = x;
  }
};

// The split merge of canon_kernel's tile (every thread of the block calls it, after storing the
// block's nodes): counts the block's `left` splits; the tile's last block merges its `splits`
// nodes at `slots` ([split][column], kVec columns per output lane) into thread ty = 0's m.a.
// Thread ty takes splits ty*c .. ty*c + c - 1 (missing ones are the identity) with a counter,
// which over a power-of-two count is the perfect tree; then the tree over ty. Out of line
// (__noinline__), so that its code does not move the register allocation and schedule of
// canon_kernel's fold loop: an edit of the inlined arrival alone measured 5-10% on float32
// throughput launches that never arrive.
template <class acc_t, int kVec>
struct Merged {
  acc_t a[kVec];
  bool last;
};
template <class Op, int kVec, class acc_t>
__device__ __noinline__ Merged<acc_t, kVec> merge_tile_splits(const acc_t* slots, unsigned* counter,
                                                              unsigned left, int splits, int c,
                                                              int X, int Y, acc_t* sm,
                                                              uint4* stage) {
  Merged<acc_t, kVec> m;
  m.last = arrive_last(counter, splits, left);
  if (!m.last) return m;
  const int tid = threadIdx.x;
  const int tx = tid & (X - 1), ty = tid / X;
  const int tile_cols = X * kVec, col = tx * kVec;
  acc_t levels[kVec][kCanonLevels];
  // kB nodes of each output loaded at a time, all in flight (one load and push at a time
  // waited for L2 once per node), merged in registers by the perfect tree over
  // the batch (a node of the tree when c >= kB; with c < kB the identities past c leave the
  // tree over c); each batch's node then goes to the counter (a push per node waited on the
  // counter's local memory). One output lane (X = 1): a batch is 128 bytes per
  // thread, which a warp whose 32 runs are whole loads coalesced (load_runs_staged).
  constexpr int kB = kVec == 1 ? 128 / static_cast<int>(sizeof(acc_t)) : 4;
  const int batches = (c + kB - 1) / kB;
#pragma unroll 1
  for (int i = 0; i < batches; ++i) {
    const int i0 = i * kB;
    acc_t x[kB][kVec];
    bool staged = false;
    if constexpr (kVec == 1) {
      if (X == 1 && c >= kB && int64_t((tid | 31) + 1) * c <= splits &&
          (reinterpret_cast<uintptr_t>(slots) & 15) == 0) {  // warp-uniform; ty = tid
        acc_t y[kB];
        load_runs_staged<acc_t, kB>(slots + int64_t(tid & ~31) * c + i0, c, stage, y);
#pragma unroll
        for (int b = 0; b < kB; ++b) x[b][0] = y[b];
        staged = true;
      }
    }
    if (!staged) {
#pragma unroll
      for (int b = 0; b < kB; ++b) {
        const int sp = ty * c + i0 + b;
#pragma unroll
        for (int v = 0; v < kVec; ++v)
          x[b][v] = i0 + b < c && sp < splits ? load_cg(slots + int64_t(sp) * tile_cols + col + v)
                                              : Op::identity();
      }
    }
#pragma unroll
    for (int w = 1; w < kB; w *= 2)
#pragma unroll
      for (int b = 0; b + w < kB; b += 2 * w)
#pragma unroll
        for (int v = 0; v < kVec; ++v) x[b][v] = Op::combine(x[b][v], x[b + w][v]);
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      if (batches == 1)
        m.a[v] = x[0][v];
      else
        counter_push<Op>(LocalLevels<acc_t>{levels[v]}, x[0][v], i);
    }
  }
  if (batches > 1) {
#pragma unroll
    for (int v = 0; v < kVec; ++v)
      m.a[v] = counter_result<Op>(LocalLevels<acc_t>{levels[v]}, batches);
  }
  // The tree over the threads that merged nodes (the next power of two of them): the other
  // threads' values are the identity, whose merges change no bits (a zero's sign aside, and
  // a zero result is +0 anyway), so the levels above it are skipped: (64, 65536) merges 4
  // splits with 2 shuffle levels instead of 5 and 3 through shared memory.
  int ym = 1;
  while (ym < Y && ym * c < splits) ym <<= 1;
  tree_over_y<Op, kVec>(m.a, X, ym, tid, sm);
  return m;
}

}  // namespace treduce
