// canon_fold.cuh: the canonical order's leaf loaders for one thread: a leaf's elements folded
// in order, through an IndexMap walk (fold_leaf) or 16-byte loads (fold_leaf_vec), and the
// final merge's staged loads of split nodes. Raw CUDA, nothing from torch.
//
#pragma once
#include "canon_config.cuh"

namespace treduce {

// Folds leaf elements r0 .. r0 + n - 1 (n <= kCanonLeaf) of kVec neighbouring outputs at `p`
// (the first output's kept offset) into a[], in increasing r: kBatch loads in flight at a time,
// `next()` giving each element's offset.
template <class Op, class in_t, int kVec, int kBatch, class Next>
__device__ __forceinline__ void fold_rows(const in_t* __restrict__ p, Next&& next, int n,
                                          typename Op::acc_t (&a)[kVec], bool ef) {
  using VecT = Vec<in_t, kVec>;
  int j = 0;
  for (; j + kBatch <= n; j += kBatch) {
    VecT x[kBatch];
    const uint64_t pol = load_policy<VecT>(ef);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) x[u] = load_in(reinterpret_cast<const VecT*>(p + next()), pol);
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
#pragma unroll
      for (int v = 0; v < kVec; ++v) a[v] = fold<Op>(a[v], x[u].v[v]);
  }
  for (; j < n; ++j) {
    const VecT x = load_in(reinterpret_cast<const VecT*>(p + next()), load_policy<VecT>(ef));
#pragma unroll
    for (int v = 0; v < kVec; ++v) a[v] = fold<Op>(a[v], x.v[v]);
  }
}

// fold_rows through an IndexMap, eight loads in flight; sixteen (`deep`) along one reduced dim
// for four 16-bit outputs per thread (8-byte loads: 128 bytes per thread, as 16-byte loads of
// eight keep) where the caller says so: canon_kernel's one-round splits, whose round counter
// holds no node (with several rounds per split sixteen measured 2-3% slower, and for float32
// 3-6% slower anywhere).
template <class Op, class in_t, int kVec>
__device__ __forceinline__ void fold_leaf(const in_t* __restrict__ p, const IndexMap& red,
                                          const StepDigits& one, int64_t r0, int n,
                                          typename Op::acc_t (&a)[kVec], bool ef,
                                          bool deep = false) {
  if constexpr (kVec == 4 && sizeof(in_t) == 2) {
    if (deep && red.ndim == 1) {
      const int64_t s = red.in_strides[0];
      int64_t off = r0 * s;
      fold_rows<Op, in_t, kVec, 16>(
          p,
          [&] {
            const int64_t o = off;
            off += s;
            return o;
          },
          n, a, ef);
      return;
    }
  }
  walk_offsets(red, r0, 1, one,
               [&](auto&& next) { fold_rows<Op, in_t, kVec, 8>(p, next, n, a, ef); });
}

// n contiguous elements (n a multiple of V, n <= kCanonLeaf) starting at a 16-byte boundary:
// 16-byte loads, in batches of kMaxBatch (eight; sixteen in the latency kernels) in flight,
// folded in increasing r (the same additions as fold_leaf).
template <class Op, class in_t, int kMaxBatch = 8>
__device__ __forceinline__ void fold_leaf_vec(const in_t* __restrict__ p, int n,
                                              typename Op::acc_t& a, bool ef) {
  constexpr int V = vec_width<in_t>();
  constexpr int kVecs = kCanonLeaf / V;
  constexpr int kBatch = kVecs < kMaxBatch ? kVecs : kMaxBatch;
  using VecT = Vec<in_t, V>;
  const VecT* __restrict__ vp = reinterpret_cast<const VecT*>(p);
  if (n == kCanonLeaf) {  // a whole leaf: unpredicated batches (predicated vector loads of
#pragma unroll            // 16-bit types end up in local memory)
    for (int b = 0; b < kVecs; b += kBatch) {
      VecT x[kBatch];
      const uint64_t pol = load_policy<VecT>(ef);
#pragma unroll
      for (int u = 0; u < kBatch; ++u) x[u] = load_in(vp + b + u, pol);
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
#pragma unroll
        for (int e = 0; e < V; ++e) a = fold<Op>(a, x[u].v[e]);
    }
    return;
  }
  for (int v = 0; v < n / V; ++v) {
    const VecT x = load_in(vp + v, load_policy<VecT>(ef));
#pragma unroll
    for (int e = 0; e < V; ++e) a = fold<Op>(a, x.v[e]);
  }
}

// Lane `src`'s pointer, on every lane of the warp (all lanes must call it).
template <class T>
__device__ __forceinline__ const T* shfl_ptr(const T* p, int src) {
  return reinterpret_cast<const T*>(__shfl_sync(kFullMask, reinterpret_cast<uintptr_t>(p), src));
}

// Staging for leaves of contiguous, 16-byte aligned elements, one warp at a time: the warp's 32
// lanes' leaves (lane l owns kL adjacent leaves from `leaf`, each n memory elements long, n the
// same on every lane and a multiple of kPieceVecs / kL vectors) are read with coalesced 16-byte
// loads (each instruction covers whole pieces of 32 / kPieceVecs lanes: kPieceVecs / kL vectors
// of each of their leaves), go through shared memory, and each lane then folds its own leaves in
// order, the kL leaves side by side: kL independent chains of dependent additions (one leaf's
// fold is a chain of 4-cycle additions). With kStep = 2 a leaf's elements are
// every other element of its n memory elements (a view with a step of 2): the same loads, and
// the lane folds elements 0, 2, 4, ... of each vector; every sector is read anyway, and the
// element after the leaf's last shares that element's aligned 16 bytes. `stage` holds the warp's
// 32 pieces in rows of kRow = kPieceVecs + 1 vectors (lane l's row: l * kRow): with the odd row
// length eight consecutive lanes meet eight different bank groups both when they store one
// piece and when they read their own rows, and every address is a base plus a constant. Each
// loading lane fetches its pieces' leaf addresses from the owning lanes by shuffle.
template <class in_t>
struct LeafStage {
  static constexpr int V = vec_width<in_t>();
  static constexpr int kLeafVecs = kCanonLeaf / V;
  static constexpr int kPieceVecs = kLeafVecs < 8 ? kLeafVecs : 8;
  static constexpr int kPiece = kPieceVecs * V;  // elements per piece
  static constexpr int kRow = kPieceVecs + 1;
  static constexpr int kSlots = 32 * kRow;  // 16-byte slots per warp
  // The warp's stage also holds fold_leaf_staged_unaligned's 32 rows of 33 4-byte values.
  static constexpr int kUnalignedRow = 33;
  static constexpr int kUnalignedVecs = (32 * kUnalignedRow * 4 + 15) / 16;
  // ... and fold_leaf_staged_shifted's and load_runs_staged's 32 rows of 9.
  static constexpr int kMergeVecs = 32 * 9;
  static constexpr int kStageVecs = std::max({kSlots, kUnalignedVecs, kMergeVecs});
  // canon_small_kernel's dynamic stage per warp: the leaves' (aligned or not) and the chunked
  // merge's, the whole stage.
  static constexpr int kSmallVecs = kStageVecs;
};

// The final merge's loads for one output lane (X = 1): lane l of a warp owns the 128-byte run of
// split nodes at `first + l * stride`. The warp loads its 32 runs with 16-byte loads, eight
// lanes to a run (a cache line), stores them in the stage in rows of 9 vectors (no bank
// conflicts, as for the leaves), and each lane takes its own row. Each lane loading its own run
// put 32 lines in every load instruction, and the L1 takes about one line per cycle: 1 µs per
// batch and block. Every lane of the warp must call it.
template <class acc_t, int kB>
__device__ __forceinline__ void load_runs_staged(const acc_t* first, int64_t stride, uint4* stage,
                                                 acc_t (&x)[kB]) {
  constexpr int kV = kB * static_cast<int>(sizeof(acc_t)) / 16;
  static_assert(kV == 8, "a run is 128 bytes");
  unsigned ln;
  asm("mov.u32 %0, %%laneid;" : "=r"(ln));
  const int piece = static_cast<int>(ln) / kV, w = static_cast<int>(ln) % kV;
  uint4 v[kV];
#pragma unroll
  for (int u = 0; u < kV; ++u)
    v[u] = __ldcg(reinterpret_cast<const uint4*>(first + (4 * u + piece) * stride) + w);
#pragma unroll
  for (int u = 0; u < kV; ++u) stage[(4 * u + piece) * (kV + 1) + w] = v[u];
  __syncwarp();
#pragma unroll
  for (int u = 0; u < kV; ++u) v[u] = stage[ln * (kV + 1) + u];
  __syncwarp();  // the next batch overwrites the stage
  memcpy(x, v, sizeof(v));
}

}  // namespace treduce
