// canon_small.cuh: the canonical order's kernels for short rows and chunks: pair_rows_kernel
// (rows of 2 or 4 aligned vectors), canon_small_kernel (one block per output or per chunk) and
// canon_small_loop_kernel (several chunks per block). Raw CUDA, nothing from torch.
//
#pragma once
#include "canon_stage.cuh"
#include "canon_tree.cuh"

namespace treduce {

// Rows of kNV = 2 or 4 16-byte vectors (K * sizeof(in_t) = 32 or 64: float32 rows of 8 or 16,
// 16-bit rows of 16 or 32), every row 16-byte aligned: each row is one leaf, so its in-order
// fold is the canonical order (as for packed_rows_kernel). canon_kernel gives such rows one
// thread each with kNV loads in flight; here each thread takes 8 / kNV rows a grid stride apart
// and issues all their loads before folding any (8 in flight). A row past the end re-reads the
// last row (the loads stay unconditional) and is not written. Its own kernel, so that
// canon_kernel's registers do not change.
constexpr int kPairThreads = 256;
constexpr int kPairLoads = 8;  // 16-byte loads in flight per thread

template <class Op, class in_t, class out_t, int kNV>
__global__ void __launch_bounds__(kPairThreads)
    pair_rows_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g) {
  constexpr int V = vec_width<in_t>();
  constexpr int kRowsPer = kPairLoads / kNV;
  using VecT = Vec<in_t, V>;
  const int64_t M = g.num_outputs, K = g.reduce_len;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t o0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o0 < M;
       o0 += stride * kRowsPer) {
    VecT x[kRowsPer][kNV];
    const uint64_t pol = load_policy<VecT>(g.evict_first);
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
      const int64_t o = o0 + i * stride < M ? o0 + i * stride : M - 1;
      const VecT* vp = reinterpret_cast<const VecT*>(in + g.kept.in_offset(o));
#pragma unroll
      for (int h = 0; h < kNV; ++h) x[i][h] = load_in(vp + h, pol);
    }
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
      typename Op::acc_t a = Op::identity();
#pragma unroll
      for (int h = 0; h < kNV; ++h)
#pragma unroll
        for (int e = 0; e < V; ++e) a = fold<Op>(a, x[i][h].v[e]);
      const int64_t o = o0 + i * stride;
      if (o < M) out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(a, K, M));
    }
  }
}

// Whether canon_small_kernel<..., kL> folds whole leaves that start off a 16-byte boundary
// (fold_small_unaligned): the chunked kernels (kL = canon_per, plan_canon_rules.cuh's chunks; and
// kL = 1 for 16-bit inputs, also looped, plan_canon_rules.cuh's chunk_per) of the inputs that stage
// unaligned (plan_canon_rules.cuh's chunk_rows).
template <class Op, class in_t, int kL>
constexpr bool small_unaligned() {
  return (kL == canon_per<in_t>() || (kL == 1 && sizeof(in_t) == 2)) &&
         stages_unaligned<Op, in_t>();
}

// canon_small_kernel's whole leaves that start off a 16-byte boundary, kL adjacent ones per lane,
// the lanes' kL * kCanonLeaf elements apart (chunks of a view such as x[1:]): 16-bit leaves
// with fold_leaves_shifted (the direct widening: kDirect), the other inputs with
// fold_leaf_staged_unaligned, one leaf at a time; returns the node of the lane's kL leaves. The
// same additions as fold_leaf. Out of line: inlined into the kernel that also had the aligned
// path, the 16-bit kernels spilled 20 bytes. Every lane of the warp must call
// it.
template <class Op, class in_t, int kL>
__device__ __noinline__ typename Op::acc_t fold_small_unaligned(
    const in_t* lp, int lane, Vec<in_t, vec_width<in_t>()>* stage) {
  using acc_t = typename Op::acc_t;
  acc_t b[kL];
#pragma unroll
  for (int l = 0; l < kL; ++l) b[l] = Op::identity();
  if constexpr (small_unaligned<Op, in_t, kL>()) {
    bool done = false;
    if constexpr (sizeof(in_t) == 2)
      done = fold_leaves_shifted<Op, in_t, kL, true>(lp, true, 0,
                                                     reinterpret_cast<Vec<in_t, 8>*>(stage), b);
    if (!done) {  // (16-bit leaves of one shift always fold above)
#pragma unroll 1
      for (int l = 0; l < kL; ++l)
        fold_leaf_staged_unaligned<Op>(lp + l * kCanonLeaf, int64_t(kL) * kCanonLeaf, lane,
                                       reinterpret_cast<float*>(stage), b[l]);
    }
  }
#pragma unroll
  for (int l = 1; l < kL; ++l) b[0] = Op::combine(b[0], b[l]);
  return b[0];
}

// canon_small_node's leaf for a warp where some are not whole (an output's end), at one leaf
// per lane: lane `lane` folds its `n` elements at `p` (0 to kCanonLeaf; 16-byte aligned) into
// `b`, in increasing order (the same additions as fold_leaf). A whole leaf with its loads in one
// batch (fold_leaf_vec); the one partial leaf (an output has at most one, its last) through the
// warp's stage, loaded by every lane, two elements each, and folded from shared memory by its
// own lane: one trip to memory, where the lane alone took one per element or vector (its loop's
// loads wait on the folds). H100, µs: float32 (1850,) 8.5 -> 6.4, bfloat16 (5283,) 6.7 -> 6.1;
// sums of whole leaves within 2%. Not used at two leaves per lane (kL = 2): there it cost
// bfloat16 rows (64, 32768), whose leaves are all whole, 9% (the same code otherwise).
// Every lane of the warp must call it.
template <class Op, class in_t>
__device__ __forceinline__ void fold_leaf_ragged(const in_t* __restrict__ p, int n, int lane,
                                                 in_t* stage, typename Op::acc_t& b, bool ef) {
  static_assert(kCanonLeaf == 64, "two staged elements per lane");
  const bool partial = n > 0 && n < kCanonLeaf;
  const unsigned owner = __ballot_sync(kFullMask, partial);
  const int src = owner ? __ffs(owner) - 1 : 0;
  const int np = __shfl_sync(kFullMask, partial ? n : 0, src);
  const in_t* pp = shfl_ptr(p, src);
  in_t x0{}, x1{};
  if (np > 0) {  // (clamped addresses: every load is unconditional and inside the leaf)
    x0 = pp[lane < np ? lane : np - 1];
    x1 = pp[lane + 32 < np ? lane + 32 : np - 1];
  }
  if (n == kCanonLeaf) fold_leaf_vec<Op, in_t, 16>(p, kCanonLeaf, b, ef);
  if (np > 0) {
    stage[lane] = x0;
    stage[lane + 32] = x1;
    __syncwarp();
    if (lane == src) {  // (b is still the identity: nothing folded into it before)
      for (int j = 0; j < np; ++j) b = fold<Op>(b, stage[j]);
    }
    __syncwarp();
  }
}

// canon_small_kernel's node of `K` elements at `p` (at most kL * blockDim.x leaves; every
// thread of the block calls it, thread 0 gets the node): see canon_small_kernel. kFlat: the
// levels across warps in thread 0's registers (tree_over_block; the same additions): the
// chunked full sums 0.7-1.4% faster, but the clustered chunks of rows (64, 65536) and (8,
// 131072) 4-7% slower, which keep tree_over_y.
template <class Op, class in_t, int kL, bool kUnaligned, bool kFlat = true>
__device__ __forceinline__ typename Op::acc_t canon_small_node(const in_t* __restrict__ p,
                                                               int64_t K, const Geometry& g,
                                                               int tid, int lane,
                                                               typename Op::acc_t* sm,
                                                               unsigned char* small_stage) {
  using acc_t = typename Op::acc_t;
  using Stage = LeafStage<in_t>;
  constexpr int V = vec_width<in_t>();
  const auto len = [&](int64_t r0) {
    return r0 >= K ? 0 : static_cast<int>(K - r0 < kCanonLeaf ? K - r0 : kCanonLeaf);
  };
  const int64_t r0 = int64_t(tid) * kL * kCanonLeaf;
  acc_t a[1];
  if constexpr (kUnaligned) {
    // Every leaf of the block starts as `p` does, off a 16-byte boundary (chunks of a view
    // such as x[1:]; kL * kCanonLeaf elements apart). A kernel of its own, so that the aligned
    // one keeps its code (this path in the same kernel cost float32 full sums 3.6-6%).
    if (__all_sync(kFullMask, len(r0 + (kL - 1) * kCanonLeaf) == kCanonLeaf)) {
      auto* stage = reinterpret_cast<Vec<in_t, V>*>(small_stage) + (tid >> 5) * Stage::kSmallVecs;
      a[0] = fold_small_unaligned<Op, in_t, kL>(p + r0, lane, stage);
    } else {
      a[0] = Op::identity();
      for (int l = 0; l < kL; ++l) {
        acc_t bl = Op::identity();
        const int64_t rl = r0 + l * kCanonLeaf;
        const int n = len(rl);
        for (int j = 0; j < n; ++j) bl = fold<Op>(bl, p[rl + j]);
        a[0] = Op::combine(a[0], bl);
      }
    }
  } else {
    acc_t b[kL];
#pragma unroll
    for (int l = 0; l < kL; ++l) b[l] = Op::identity();
    // A float32 leaf's two phases one after the other where it folds into a double: issuing
    // both together measured slower at the same 64 registers (µs:
    // rows (4096, 4096) 22.9 -> 22.5, 2^20 9.1 -> 8.9, 2^24 25.4 -> 24.8, 2^28 256.4 ->
    // 254.9; the same bits). Float32 inputs into a compensated float64 pair keep two (one
    // measured slower there: 2^20 in a CUDA graph 5.58 -> 6.03 µs), as do the other inputs
    // (16-bit one-leaf kernels have one phase; the rest were not measured).
    constexpr int kPh = sizeof(in_t) == 4 && sizeof(acc_t) == 8 ? 1 : 2;
    if (__all_sync(kFullMask, len(r0 + (kL - 1) * kCanonLeaf) == kCanonLeaf)) {
      if constexpr (sums_exactly_any_order<Op, in_t>()) {
        fold_run_any_order<Op, in_t, kL>(p + (r0 - int64_t(lane) * kL * kCanonLeaf), lane, b,
                                         g.evict_first);
      } else {
        auto* stage = reinterpret_cast<Vec<in_t, V>*>(small_stage) + (tid >> 5) * Stage::kSmallVecs;
        fold_leaf_staged<Op, in_t, 1, kL, kPh>(p + r0, kCanonLeaf, lane, stage, b, g.evict_first);
      }
    } else if constexpr (kL == 1) {
      auto* stage = reinterpret_cast<Vec<in_t, V>*>(small_stage) + (tid >> 5) * Stage::kSmallVecs;
      fold_leaf_ragged<Op, in_t>(p + r0, len(r0), lane, reinterpret_cast<in_t*>(stage), b[0],
                                 g.evict_first);
    } else {
#pragma unroll
      for (int l = 0; l < kL; ++l) {
        const int64_t rl = r0 + l * kCanonLeaf;
        const int n = len(rl);
        if (n % V == 0) {
          fold_leaf_vec<Op, in_t, 16>(p + rl, n, b[l], g.evict_first);
        } else {
          for (int j = 0; j < n; ++j) b[l] = fold<Op>(b[l], p[rl + j]);
        }
      }
    }
    a[0] = b[0];
#pragma unroll
    for (int l = 1; l < kL; ++l) a[0] = Op::combine(a[0], b[l]);
  }
  if constexpr (kFlat) {
    return tree_over_block<Op>(a[0], static_cast<int>(blockDim.x), tid, sm);
  } else {
    tree_over_y<Op, 1>(a, 1, static_cast<int>(blockDim.x), tid, sm);
    return a[0];
  }
}

// The chunk nodes' merge: `done` of output o's `nodes` chunk nodes at `slots` are this block's;
// the output's last block to arrive merges them and stores the output.
template <class Op, class out_t>
__device__ __forceinline__ void merge_chunk_nodes(const typename Op::acc_t* slots,
                                                  unsigned* counters, unsigned done, int nodes,
                                                  int merge_per_thread, typename Op::acc_t* sm,
                                                  uint4* stage, out_t* out, const Geometry& g,
                                                  int64_t o) {
  const Merged<typename Op::acc_t, 1> m =
      merge_tile_splits<Op, 1>(slots, &counters[o], done, nodes, merge_per_thread, 1,
                               static_cast<int>(blockDim.x), sm, stage);
  if (m.last && threadIdx.x == 0)
    out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(m.a[0], g.reduce_len, g.num_outputs));
}

// Outputs of at most kL * kCanonThreads leaves whose K elements are one 16-byte aligned run (full
// sums and rows of up to 16384 float32 or 32768 16-bit elements, every output's first element
// aligned), where one block per output does all of its work: T threads (the leaves over kL
// rounded up to a power of two, at least a warp), thread t folds leaves kL t .. kL t + kL - 1
// (warps of whole leaves through the stage, both phases in flight, a lane's kL leaves side by
// side; other leaves with their loads in one batch, a last partial leaf staged by its warp at one
// leaf per thread (fold_leaf_ragged), else element by element) and merges them (their node),
// then the perfect tree over the T lanes (tree_over_block; tree_over_y in clusters) and thread 0
// stores. The same additions as canon_kernel, in a kernel a fraction of its size and without its
// split, cluster and counter paths: a 2^10-element sum took 2.58 µs in a CUDA graph through the
// latency kernel and 1.84 through a standalone kernel of this shape. kL = 2 (1- and 2-byte
// inputs, rows of 257-512 leaves, as canon_per): bfloat16 rows of 32768. The stage is dynamic
// shared memory, T / 32 warps of LeafStage::kSmallVecs vectors.
//
// Chunked (chunk > 0: longer outputs, such as large full sums): block (x, y) takes chunk x of
// output y, elements [x * chunk, (x + 1) * chunk) with chunk = kL * blockDim.x leaves (64 to
// 256 threads: plan_canon_rules.cuh's chunk_threads), a node of the tree, stores that node in
// partials[y * gridDim.x + x], and the output's last block to arrive merges its gridDim.x
// nodes (merge_tile_splits, merge_per_thread of them per thread: the split merge of
// canon_kernel). The same nodes and tree as canon_kernel's splits,
// in blocks that live for one chunk: full float16 sums of 2^29 291.7 -> 265.8 µs);
// canon_small_loop_kernel (below) takes several chunks per block. kUnaligned: chunks that
// start off a 16-byte boundary (views such as x[1:]; plan_canon_rules.cuh's chunk_rows), whole
// leaves through fold_small_unaligned, the rest element by element; and (chunk = 0) outputs of at
// most kL * kCanonThreads leaves that start off a boundary, one block each (plan_canon_rules.cuh's
// small_block: misaligned rows such as (16384, 16384) from a base + 1).
//
// kCluster (aligned chunks, 2 to kChunkCluster per output, one per block: plan_canon_rules.cuh's
// chunk_cluster): an output's chunks are the blocks of one thread-block cluster (along x,
// gridDim.x = chunks = the cluster's size, rank blockIdx.x). Each block stores its node into
// the shared memory of the cluster's first block (st.async, counted on that block's mbarrier),
// which merges them by the same tree over the chunk index and stores the output: in place of
// the partials in global memory, the fence and the atomic arrival, whose round trips took
// about 2 µs after the last block's node (bench/timeline). The same nodes and
// tree: the bits do not change; partials and counters go unused.
//
// kWhole: one block per output (chunk must be 0) in an instantiation without the chunks' merge,
// which run_canon.cuh's launch_small takes for two leaves per thread. With the merge compiled in
// beside it, the same node code ran bfloat16 rows (16384, 32768) at 290.3 µs, against 257.2
// without.
template <class Op, class in_t, class out_t, int kL = 1, bool kUnaligned = false,
          bool kCluster = false, bool kWhole = false>
__global__ void __launch_bounds__(kCanonThreads)
    canon_small_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                       typename Op::acc_t* __restrict__ partials, unsigned* __restrict__ counters,
                       int64_t chunk, int merge_per_thread) {
  static_assert(!kCluster || (kL == 1 && !kUnaligned), "clusters of aligned one-leaf chunks");
  static_assert(!(kCluster && kWhole), "clusters merge chunks");
  using acc_t = typename Op::acc_t;
  __shared__ acc_t sm[kCanonThreads];
  extern __shared__ __align__(16) unsigned char small_stage[];
  // kCluster: the chunk nodes, in the cluster's first block, then that block's mbarrier.
  __shared__ __align__(16) acc_t cluster_nodes[kCluster ? kChunkCluster + 16 / sizeof(acc_t) : 1];
  uint64_t* const cluster_bar = reinterpret_cast<uint64_t*>(cluster_nodes + kChunkCluster);
  if constexpr (kCluster) cluster_merge_start(cluster_bar, blockIdx.x == 0);
  const bool chunked = !kWhole && chunk > 0;
  const int64_t o = chunked ? blockIdx.y : blockIdx.x;
  const int64_t c0 = chunked ? int64_t(blockIdx.x) * chunk : 0;  // the chunk's first element
  const int64_t K = chunked ? min(chunk, g.reduce_len - c0) : g.reduce_len;
  const in_t* __restrict__ p = in + g.kept.in_offset(o) + c0;
  const int tid = threadIdx.x, lane = tid & 31;
  const acc_t a =
      canon_small_node<Op, in_t, kL, kUnaligned, !kCluster>(p, K, g, tid, lane, sm, small_stage);
  if (kWhole || chunk == 0) {
    if (tid == 0) out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(a, K, g.num_outputs));
    return;
  }
  if constexpr (kCluster) {
    cluster_wait();         // every block of the cluster has started (every thread takes part)
    if (blockIdx.x != 0) {  // this chunk's node, to the cluster's first block; then done
      if (tid == 0) cluster_store_async(&cluster_nodes[blockIdx.x], a, cluster_bar, 0);
      return;
    }
    const int n = static_cast<int>(gridDim.x);
    const acc_t b = merge_cluster_nodes<Op, acc_t>(  // (n <= kChunkCluster: shuffles only)
        [&] { return tid == 0  ? a
                     : tid < n ? cluster_nodes[tid]
                               : Op::identity(); }, cluster_bar,
        n, 1, tid, sm);
    if (tid == 0)
      out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(b, g.reduce_len, g.num_outputs));
    return;
  }
  if constexpr (!kWhole) {
    acc_t* const slots = partials + o * int64_t(gridDim.x);
    if (tid == 0) slots[blockIdx.x] = a;
    merge_chunk_nodes<Op>(
        slots, counters, 1, static_cast<int>(gridDim.x), merge_per_thread, sm,
        reinterpret_cast<uint4*>(small_stage) + (tid >> 5) * LeafStage<in_t>::kSmallVecs, out, g,
        o);
  }
}

// Chunks of one leaf per thread, several per block (plan_canon_rules.cuh's chunk_loop: float32 two
// per block from 2048 chunks, 2% faster at 2^28-2^30; 16-bit four from 8192 chunks, 2% faster than
// two-leaf chunks at float16 2^29; kUnaligned: 16-bit chunks off a 16-byte boundary): block (x, y)
// takes chunks x, x + gridDim.x, ... below `chunks` of output y, each canon_small_kernel's node
// stored at partials[y * chunks + q]: the same nodes, the same tree. A kernel of its own: the loop
// in canon_small_kernel cost its 16-bit chunks 5-9% at any count, at the same registers (ptxas then
// issued 9 of a lane's 16 loads before the first staging store, not 13). Bounded to four blocks per
// SM, the 64 registers canon_small_kernel takes for float32 without a bound (unbounded, the loop
// took 80, and float32 2^24-2^26 ran 3-5% slower). Misaligned float32 chunks measured no faster
// looped and are not instantiated.
template <class Op, class in_t, class out_t, bool kUnaligned = false>
__global__ void __launch_bounds__(kCanonThreads, 4)
    canon_small_loop_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                            typename Op::acc_t* __restrict__ partials,
                            unsigned* __restrict__ counters, int64_t chunk, int chunks,
                            int merge_per_thread) {
  using acc_t = typename Op::acc_t;
  __shared__ acc_t sm[kCanonThreads];
  extern __shared__ __align__(16) unsigned char small_stage[];
  const int64_t o = blockIdx.y;
  const int tid = threadIdx.x, lane = tid & 31;
  acc_t* const slots = partials + o * int64_t(chunks);
  for (int64_t q = blockIdx.x; q < chunks; q += gridDim.x) {
    const int64_t c0 = q * chunk;
    const acc_t a = canon_small_node<Op, in_t, 1, kUnaligned>(
        in + g.kept.in_offset(o) + c0, min(chunk, g.reduce_len - c0), g, tid, lane, sm,
        small_stage);  // (the next chunk's tree_over_block waits for thread 0's read of sm)
    if (tid == 0) slots[q] = a;
  }
  merge_chunk_nodes<Op>(
      slots, counters, (chunks - 1 - blockIdx.x) / gridDim.x + 1, chunks, merge_per_thread, sm,
      reinterpret_cast<uint4*>(small_stage) + (tid >> 5) * LeafStage<in_t>::kSmallVecs, out, g, o);
}

}  // namespace treduce
