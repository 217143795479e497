// canon.cuh: floating sums and means in the canonical order (issue 4, docs/numerics-design.md).
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
// 3-6% slower anywhere; NOTES step 154).
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
// fold is a chain of 4-cycle additions; NOTES step 24). With kStep = 2 a leaf's elements are
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
// batch and block (NOTES step 39). Every lane of the warp must call it.
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

// Staging for whole 16-bit leaves that all start kShift (1 .. 7) elements past a 16-byte
// boundary (a view such as x[1:]), each lane owning kL (1 or 2) adjacent ones, when the warp's
// lanes are G runs (G = 1 .. 32, a power of two: the warp's outputs, lane l in run l % G at
// position l / G, R = 32 / G lanes each) whose leaves follow each other in memory (lane l's from
// its run's first lane's plus l / G * kL leaves). `base0` is lane 0's first leaf rounded down to
// the boundary and `delta` this lane's, in vectors from it. A phase folds one leaf per lane: run
// leaf ph * R + p on the lane at position p, whose 64 elements lie in 9 aligned vectors, the
// ninth the next leaf's first. The warp loads the phase's 256 leaf vectors coalesced (load t of a
// lane is vector 32 t + ln of the phase's runs, back to back; each load fetches its run's offset
// with one 32-bit shuffle) plus each run's ninth (lanes l < G, one vector each), stores each
// vector in its leaf's row of 9 and, when it starts a leaf, also in the previous leaf's row at 8
// (the ninth vectors without loads of their own), and each lane folds elements kShift .. kShift
// + 63 of its row in order, every place a constant. Then the leaves' values move by shuffle to
// their owning lanes (a[l] is leaf kL p + l of the lane's run). Full sums (G = 1) load 8 vectors
// and one more per phase; lanes that each loaded their own tail vectors touched 32 cache lines
// per tail load (NOTES steps 35, 62). The same additions: each leaf in order from its first
// element, one chain per lane and phase.
template <class Op, class in_t, int kShift, int kL, bool kDirect = false>
__device__ __forceinline__ void fold_leaf_staged_shifted(const Vec<in_t, 8>* base0, int delta,
                                                         int log_g, Vec<in_t, 8>* stage,
                                                         typename Op::acc_t (&a)[kL]) {
  using acc_t = typename Op::acc_t;
  using VecT = Vec<in_t, 8>;
  constexpr int kRow = 9;
  static_assert(sizeof(in_t) == 2 && kShift > 0 && kShift < 8 && (kL == 1 || kL == 2) &&
                    32 * kRow <= LeafStage<in_t>::kStageVecs,
                "16-bit leaves, shifted, in the stage");
  const auto load = [&](int at) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(base0 + at));
    VecT x;
    memcpy(&x, &u, sizeof(u));
    return x;
  };
  const int log_r = 5 - log_g;  // R = 32 / G lanes per run
  acc_t f[kL];
#pragma unroll 1
  for (int ph = 0; ph < kL; ++ph) {
    // The lane index read in each phase, not taken from the caller: offsets derived from it
    // would be hoisted out of the loops and kept live there (the two-leaf kernel then spilled).
    unsigned ln_u;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(ln_u));
    const int ln = static_cast<int>(ln_u);
    VecT x[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) {  // vector o of run g's phase part
      const int m = 32 * t + ln, g = m >> (log_r + 3), o = m & ((8 << log_r) - 1);
      x[t] = load(__shfl_sync(kFullMask, delta, g) + (ph << (log_r + 3)) + o);
    }
    // Run ln's ninth vector (lanes ln < G; the others re-read their own first).
    const int tail_at = __shfl_sync(kFullMask, delta, ln & ((1 << log_g) - 1)) +
                        (ln < (1 << log_g) ? ((ph + 1) << (log_r + 3)) : (ph << (log_r + 3)));
    const VecT last = load(tail_at);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const int m = 32 * t + ln, g = m >> (log_r + 3), o = m & ((8 << log_r) - 1);
      const int row = g + ((o >> 3) << log_g);  // the lane that folds vector o's leaf
      stage[row * kRow + (o & 7)] = x[t];
      if ((o & 7) == 0 && o > 0) stage[(row - (1 << log_g)) * kRow + 8] = x[t];
    }
    if (ln < (1 << log_g)) stage[(ln + (((1 << log_r) - 1) << log_g)) * kRow + 8] = last;
    __syncwarp();
    const VecT* const row = stage + ln * kRow;
    acc_t b = Op::identity();
#pragma unroll
    for (int c = 0; c < kRow; ++c) {
      const VecT z = row[c];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        // Static: element pos - kShift of the lane's leaf. canon_kernel's shifted leaves
        // widen in two steps (to_acc, then Op::reduce): fold's direct conversion measured
        // 2.2-2.7% slower there (NOTES step 78). kDirect (canon_small_kernel's chunks): fold's,
        // 1.4-1.8% faster there (NOTES step 122). The same value either way.
        const int pos = c * 8 + e;
        if (pos >= kShift && pos < kShift + kCanonLeaf) {
          if constexpr (kDirect)
            b = fold<Op>(b, z.v[e]);
          else
            b = Op::reduce(b, to_acc<typename Op::value_t>(z.v[e]));
        }
      }
    }
    f[ph] = b;
    __syncwarp();  // the next phase overwrites the stage
  }
  if constexpr (kL == 1) {
    a[0] = f[0];
  } else {  // run leaf 2 p + l: phase (2 p + l) / R, position (2 p + l) % R
    unsigned ln_u;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(ln_u));
    const int ln = static_cast<int>(ln_u), g = ln & ((1 << log_g) - 1), p = ln >> log_g;
#pragma unroll
    for (int l = 0; l < 2; ++l) {
      const int q = 2 * p + l, src = g + ((q & ((1 << log_r) - 1)) << log_g);
      const acc_t lo = shfl_idx(f[0], src), hi = shfl_idx(f[1], src);
      a[l] = (q >> log_r) == 0 ? lo : hi;
    }
  }
}

// Elements past the last 16-byte boundary at or before `p`.
template <class in_t>
__device__ __forceinline__ int shift_of(const in_t* p) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(p) & 15) / static_cast<int>(sizeof(in_t));
}

// The warp's lanes each own kL adjacent whole 16-bit leaves from `p`, the warp's outputs G =
// 2^log_g runs of lanes (lane l in run l % G): folds them with fold_leaf_staged_shifted, the
// shift a constant, and returns true, when every lane's leaves start the same number of elements
// (1 .. 7) past a 16-byte boundary, lie within 2^31 vectors of lane 0's and follow each other
// within each run; else returns false and folds nothing. Every lane of the warp must call it.
// kDirect: fold_leaf_staged_shifted's widening.
template <class Op, class in_t, int kL, bool kDirect = false>
__device__ __forceinline__ bool fold_leaves_shifted(const in_t* p, bool whole, int log_g,
                                                    Vec<in_t, 8>* stage,
                                                    typename Op::acc_t (&a)[kL]) {
  using VecT = Vec<in_t, 8>;
  const int shift = shift_of(p);
  const VecT* const base = reinterpret_cast<const VecT*>(p - shift);
  const VecT* const base0 = shfl_ptr(base, 0);
  const int shift0 = __shfl_sync(kFullMask, shift, 0);
  const int64_t delta = base - base0;
  const int d = static_cast<int>(delta);
  const int ln = static_cast<int>(threadIdx.x & 31);
  const int d_run = __shfl_sync(kFullMask, d, ln & ((1 << log_g) - 1));  // its run's first lane
  if (shift0 == 0 || !__all_sync(kFullMask, whole && shift == shift0 && delta == d &&
                                                d - d_run == (ln >> log_g) * 8 * kL))
    return false;
  switch (shift0) {
    case 1:
      fold_leaf_staged_shifted<Op, in_t, 1, kL, kDirect>(base0, d, log_g, stage, a);
      break;
    case 2:
      fold_leaf_staged_shifted<Op, in_t, 2, kL, kDirect>(base0, d, log_g, stage, a);
      break;
    case 3:
      fold_leaf_staged_shifted<Op, in_t, 3, kL, kDirect>(base0, d, log_g, stage, a);
      break;
    case 4:
      fold_leaf_staged_shifted<Op, in_t, 4, kL, kDirect>(base0, d, log_g, stage, a);
      break;
    case 5:
      fold_leaf_staged_shifted<Op, in_t, 5, kL, kDirect>(base0, d, log_g, stage, a);
      break;
    case 6:
      fold_leaf_staged_shifted<Op, in_t, 6, kL, kDirect>(base0, d, log_g, stage, a);
      break;
    default:
      fold_leaf_staged_shifted<Op, in_t, 7, kL, kDirect>(base0, d, log_g, stage, a);
  }
  return true;
}

// kPh phases' loads are issued together where a leaf has that many (the latency kernels,
// canon_kernel<..., kLat = true>: one memory latency per two phases; their registers allow it):
// a phase past n re-reads the last phase and is not folded, so that the loads stay
// unconditional. A 16-bit leaf is one phase of one leaf per lane (P vectors of 8).
//
// kCols = kStep (2 or 4; kL = 1): the leaf is kCols neighbouring outputs' leaves, interleaved
// (columns whose kCols outputs make up each reduced element's row: C = 2 or 4 mid dims, two
// columns), and element e of a vector goes to output e % kCols, a[e % kCols]: each output's
// elements in order, as fold_leaf's kVec loads would fold them, with the loads coalesced (a
// lane reading its own 64 rows put 32 lines in every load instruction: NOTES steps 71, 73).
//
// `odd` (kStep = 2, one output per lane): this lane's leaf is the odd elements of its run, which
// starts one element before the leaf (`leaf` is then the element before the leaf's first:
// every second output of C = 2 mid dims, whose leaves start 4 bytes past a 16-byte boundary,
// folded from its even neighbour's aligned run; NOTES step 118).
template <class Op, class in_t, int kStep = 1, int kL = 1, int kPh = 1, int kCols = 1>
__device__ __forceinline__ void fold_leaf_staged(const in_t* leaf, int n, int lane,
                                                 Vec<in_t, vec_width<in_t>()>* stage,
                                                 typename Op::acc_t (&a)[kL * kCols], bool ef,
                                                 bool odd = false) {
  using S = LeafStage<in_t>;
  using VecT = Vec<in_t, S::V>;
  constexpr int P = S::kPieceVecs;
  constexpr int PL = P / kL;  // vectors of each of a lane's leaves per phase
  static_assert(PL * kL == P, "a piece splits evenly between the leaves");
  static_assert(kCols == 1 || (kCols == kStep && kL == 1 && S::V % kCols == 0),
                "interleaved outputs: one leaf per lane, whole rows in each vector");
  const in_t* src[P];  // the owner of the piece that each of this lane's loads reads
#pragma unroll
  for (int u = 0; u < P; ++u) src[u] = shfl_ptr(leaf, (u * 32 + lane) / P);
  // Load u of this lane: vector w = lane % P of piece u * 32 / P + lane / P, that is vector
  // w % PL of the owner's leaf w / PL.
  const int w = lane % P;
  const int64_t lane_off = (w / PL) * int64_t(n) + (w % PL) * S::V;
  VecT* const put = stage + (lane / P) * S::kRow + w;
  const VecT* const get = stage + lane * S::kRow;
  constexpr int kPhase = PL * S::V;  // memory elements of each leaf per phase
  constexpr int kLeafPhases = kCanonLeaf * kStep / kPhase > 1 ? kCanonLeaf * kStep / kPhase : 1;
  constexpr int kN = kPh < kLeafPhases ? kPh : kLeafPhases;  // phases in flight
  for (int ph = 0; ph < n; ph += kN * kPhase) {
    VecT x[kN][P];  // 32 pieces x P vectors over 32 lanes: P loads each per phase
    const uint64_t pol = load_policy<VecT>(ef);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      const int at = i == 0 ? ph : min(ph + i * kPhase, n - kPhase);
#pragma unroll
      for (int u = 0; u < P; ++u)
        x[i][u] = load_in(reinterpret_cast<const VecT*>(src[u] + lane_off + at), pol);
    }
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      if (i > 0 && ph + i * kPhase >= n) break;  // warp-uniform: n is the same on every lane
#pragma unroll
      for (int u = 0; u < P; ++u) put[u * (32 / P) * S::kRow] = x[i][u];
      __syncwarp();
#pragma unroll
      for (int v = 0; v < PL; ++v) {
        VecT y[kL];
#pragma unroll
        for (int l = 0; l < kL; ++l) y[l] = get[l * PL + v];
#pragma unroll
        for (int e = 0; e < S::V; e += kStep)
#pragma unroll
          for (int c = 0; c < kCols; ++c)
#pragma unroll
            for (int l = 0; l < kL; ++l) {
              if constexpr (kStep == 2 && kCols == 1)
                a[l] = fold<Op>(a[l], odd ? y[l].v[e + 1] : y[l].v[e]);
              else
                a[l * kCols + c] = fold<Op>(a[l * kCols + c], y[l].v[e + c]);
            }
      }
      __syncwarp();  // the next phase overwrites the stage
    }
  }
}

// Whether a warp's run of leaves sums exactly in Op's accumulator whatever the order: float16
// values widened to double. Each is a multiple of 2^-24 of magnitude at most 65504 < 2^16, so
// every partial sum of at most 2^13 of them is a multiple of 2^-24 below 2^29 and fits in the 53
// bits of a double; infinities and NaN give the same result in any order, and a zero result is
// +0 from a +0 identity (NOTES step 57). Then each node of the canonical tree over at most 2^13
// elements is that exact sum, however its elements were grouped (NOTES step 131).
template <class Op, class in_t>
constexpr bool sums_exactly_any_order() {
  return std::is_same_v<in_t, __half> && widens<Op>::value &&
         std::is_same_v<typename Op::acc_t, double>;
}

// A warp's kL * 32 whole leaves, one aligned run of kL * 32 * kCanonLeaf elements at `run` (lane
// l's leaves kL l .. kL l + kL - 1), where sums_exactly_any_order: lane l folds vectors l, l + 32,
// l + 64, ... of the run, coalesced straight from global memory, into a[u % kL] for its u-th
// load. a[] holds no leaf's node, but a[0] + ... + a[kL - 1] summed over the warp's lanes by
// any tree is the exact sum of the run, as fold_leaf_staged's leaves give it: the same bits,
// without the stage, its shuffled addresses and its warp barriers.
template <class Op, class in_t, int kL>
__device__ __forceinline__ void fold_run_any_order(const in_t* __restrict__ run, int lane,
                                                   typename Op::acc_t (&a)[kL], bool ef) {
  static_assert(sums_exactly_any_order<Op, in_t>() && 32 * kL * kCanonLeaf <= (1 << 13),
                "a run that sums exactly in any order");
  constexpr int V = vec_width<in_t>();
  constexpr int kLoads = kL * kCanonLeaf / V;  // per lane
  constexpr int kBatch = 8;
  static_assert(kLoads % kBatch == 0, "whole batches");
  using VecT = Vec<in_t, V>;
  const VecT* __restrict__ vp = reinterpret_cast<const VecT*>(run) + lane;
#pragma unroll
  for (int b = 0; b < kLoads; b += kBatch) {
    VecT x[kBatch];
    const uint64_t pol = load_policy<VecT>(ef);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) x[u] = load_in(vp + (b + u) * 32, pol);
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
#pragma unroll
      for (int e = 0; e < V; ++e) a[(b + u) % kL] = fold<Op>(a[(b + u) % kL], x[u].v[e]);
  }
}

// Whether canon_kernel folds interleaved leaves (fold_leaves_interleaved): inputs of 2 to 8
// bytes (a warp's leaves are 4 KB or more).
template <class in_t>
constexpr bool interleaves() {
  return sizeof(in_t) >= 2;
}

// Staging for a warp of interleaved leaves, one output per lane: X neighbouring outputs (X = 4,
// 8, 16 or 32; lane l is output lane l % X) whose elements are interleaved, each reduced
// element's X values side by side (mid dims (A, B, C) over B with C = X, a tile of one A), times
// 32 / X consecutive whole leaves (lane l's is the warp's leaf l / X). The warp's leaves are one
// contiguous run of 32 kCanonLeaf elements from `base` (lane 0's leaf, on a 16-byte boundary):
// row r of leaf j is its elements (kCanonLeaf j + r) X .. + X - 1. A phase reads rows ph R .. ph R
// + R - 1 of every leaf (4096 bytes, R X elements per leaf) with eight coalesced 16-byte loads
// per lane and stores them in the stage, leaf j's part at j (R X + Pad) (Pad = max(X, V)
// elements: each lane's column read then meets no bank conflict), and each lane folds its
// column's R elements in order: the same additions as fold_leaf, with 4 KB per warp in flight
// instead of fold_leaf's eight elements per lane (1 KB of float32).
template <class Op, class in_t, int X, int kPh>
__device__ __forceinline__ void fold_leaves_interleaved(const in_t* base, int lane,
                                                        Vec<in_t, vec_width<in_t>()>* stage,
                                                        typename Op::acc_t& a, bool ef) {
  constexpr int V = vec_width<in_t>();
  using VecT = Vec<in_t, V>;
  constexpr int kPhaseBytes = 4096;
  constexpr int kPhases = 32 * kCanonLeaf * int(sizeof(in_t)) / kPhaseBytes;
  constexpr int R = kCanonLeaf / kPhases;        // rows of each leaf per phase
  constexpr int kLoads = kPhaseBytes / 16 / 32;  // 16-byte loads per lane per phase
  constexpr int PV = R * X / V;                  // a leaf's vectors per phase (8 X)
  constexpr int kPad = X > V ? X : V;
  constexpr int kPart = R * X + kPad;  // stage elements per leaf (a multiple of V)
  static_assert(X >= 4 && X <= 32 && kPhases >= 1 && kPhases * R == kCanonLeaf && kLoads == 8 &&
                    PV % 32 == 0 && kPart % V == 0,
                "whole phases of 4 KB, whole warp loads per leaf");
  static_assert(32 / X * kPart * sizeof(in_t) <= LeafStage<in_t>::kStageVecs * 16,
                "a phase fits the warp's stage");
  const VecT* const vb = reinterpret_cast<const VecT*>(base) + lane;
  VecT* const put = stage + lane;
  const in_t* const get =
      reinterpret_cast<const in_t*>(stage) + (lane / X) * kPart + (lane & (X - 1));
  constexpr int kN = kPh < kPhases ? kPh : kPhases;  // phases in flight
  static_assert(kPhases % kN == 0, "whole steps of kN phases");
#pragma unroll 1
  for (int ph = 0; ph < kPhases; ph += kN) {
    VecT x[kN][kLoads];
    const uint64_t pol = load_policy<VecT>(ef);
    // Load u: vector (u % (PV / 32)) * 32 + lane of leaf j = u / (PV / 32)'s phase part.
#pragma unroll
    for (int i = 0; i < kN; ++i)
#pragma unroll
      for (int u = 0; u < kLoads; ++u)
        x[i][u] =
            load_in(vb + ((u / (PV / 32)) * kPhases + ph + i) * PV + (u % (PV / 32)) * 32, pol);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
#pragma unroll
      for (int u = 0; u < kLoads; ++u)
        put[(u / (PV / 32)) * (kPart / V) + (u % (PV / 32)) * 32] = x[i][u];
      __syncwarp();
#pragma unroll
      for (int r = 0; r < R; ++r) a = fold<Op>(a, get[r * X]);
      __syncwarp();  // the next phase overwrites the stage
    }
  }
}

// fold_leaves_interleaved for the warp's X (4 .. 32), kPh phases' loads issued together (the
// latency kernel's two; a phase past the leaf's last is not loaded).
template <class Op, class in_t, int kPh>
__device__ __forceinline__ void fold_leaves_interleaved(const in_t* base, int X, int lane,
                                                        Vec<in_t, vec_width<in_t>()>* stage,
                                                        typename Op::acc_t& a, bool ef) {
  switch (X) {
    case 4:
      fold_leaves_interleaved<Op, in_t, 4, kPh>(base, lane, stage, a, ef);
      break;
    case 8:
      fold_leaves_interleaved<Op, in_t, 8, kPh>(base, lane, stage, a, ef);
      break;
    case 16:
      fold_leaves_interleaved<Op, in_t, 16, kPh>(base, lane, stage, a, ef);
      break;
    default:
      fold_leaves_interleaved<Op, in_t, 32, kPh>(base, lane, stage, a, ef);
      break;
  }
}

// Whether fold_leaf_staged_unaligned (below) takes Op's inputs: at most 4 bytes, a 4-byte value
// type. Its callers check it.
template <class Op, class in_t>
constexpr bool stages_unaligned() {
  return sizeof(in_t) <= 4 && sizeof(typename Op::value_t) == 4;
}

// The staging of fold_leaf_staged_unaligned and fold_leaves_staged_short_runs (below): `at(u,
// ph)` is the address of element ph + lane of lane u's leaf, taken for u = 0 .. 31 in turn in
// each phase; the loaded elements go through the stage and each lane folds its own row in
// order. kRagged: leaves of any length up to a leaf (a warp's last leaves of an output); `at`
// returns nullptr for an element past lane u's leaf, which is not loaded, and each lane folds
// the first n of its row (0: none). Every lane of the warp must call it.
template <class Op, class in_t, bool kRagged = false, class At>
__device__ __forceinline__ void fold_leaves_staged_at(At&& at, int lane, float* stage,
                                                      typename Op::acc_t& a, int n = kCanonLeaf) {
  using value_t = typename Op::value_t;
  constexpr int kRow = LeafStage<in_t>::kUnalignedRow;
  // One phase's 32 loads in flight per lane (16 measured 0.77-0.82x of aligned float32 sums:
  // half the bytes in flight of the aligned staging).
#pragma unroll 1
  for (int ph = 0; ph < kCanonLeaf; ph += 32) {
    in_t x[32];
#pragma unroll
    for (int u = 0; u < 32; ++u) {
      const in_t* e = at(u, ph);
      if (kRagged && e == nullptr)
        x[u] = in_t{};  // never folded
      else
        x[u] = *e;
    }
#pragma unroll
    for (int u = 0; u < 32; ++u) stage[u * kRow + lane] = to_acc<value_t>(x[u]);
    __syncwarp();
#pragma unroll
    for (int j = 0; j < 32; ++j)
      if (!kRagged || ph + j < n) a = Op::reduce(a, stage[lane * kRow + j]);
    __syncwarp();  // the next phase overwrites the stage
  }
}

// Staging for the 32 whole leaves of a warp (contiguous elements, lane u's leaf at `leaf` on
// lane u) that do not start on a 16-byte boundary (a view such as x[1:]), for inputs of at most
// 4 bytes: a phase stages elements ph .. ph + 31 of every leaf, instruction u reading them from
// lane u's leaf with one coalesced element load per lane, converted to the value type and stored
// in rows of kUnalignedRow = 33 (free of bank conflicts both ways); each lane then folds its own
// row in order. The same additions as fold_leaf; without it each lane read its leaf element by
// element, 32 cache lines per warp load (the L1 takes a wavefront per line: 1 TB/s; NOTES step
// 21). When lane u's leaf is lane 0's plus u * spacing on every lane (full sums, rows of one
// output per warp) the addresses come from lane 0's; otherwise each load fetches its leaf's
// address by shuffle (rows of several outputs per warp).
template <class Op, class in_t>
__device__ __forceinline__ void fold_leaf_staged_unaligned(const in_t* leaf, int64_t spacing,
                                                           int lane, float* stage,
                                                           typename Op::acc_t& a) {
  if constexpr (stages_unaligned<Op, in_t>()) {
    const in_t* const leaf0 = shfl_ptr(leaf, 0);
    if (__all_sync(kFullMask, leaf == leaf0 + lane * spacing)) {  // one shuffle, outside the loop
      fold_leaves_staged_at<Op, in_t>(
          [&](int u, int ph) { return leaf0 + u * spacing + ph + lane; }, lane, stage, a);
    } else {
      fold_leaves_staged_at<Op, in_t>([&](int u, int ph) { return shfl_ptr(leaf, u) + ph + lane; },
                                      lane, stage, a);
    }
  }
}

// The warp's 32 whole leaves where the innermost reduced dim's runs are shorter than a leaf
// (NCHW statistics with H x W < 64, such as (128, 2048, 7, 7)), or not whole 16-byte vectors
// (bfloat16 14 x 14 maps): reduced dims (outer, run) of strides (s_outer, 1), a leaf in one
// run or across two or more. Lane u's leaf is leaf q0 + (u / X) * dq of output lane u % X,
// whose elements start at p0 + (u % X) * s_out (the caller checks it). Staged as
// fold_leaf_staged_unaligned stages contiguous leaves: in phase ph, load u reads element ph +
// lane of lane u's leaf, so that the 32 lanes read 32 consecutive elements of the reduced order
// (one or two runs) and each lane then folds its own leaf in order: the same additions as
// fold_leaf, whose walk takes eight memory latencies a leaf (NOTES step 137).
// The element's (outer, run) position advances from one leaf of an output lane to the next by
// a precomputed quotient and remainder, without a division. kRagged: the leaves need not be
// whole (an output's last leaves; `n` is this lane's leaf's length, 0 past the last): elements
// past the output's K = outer x run are not loaded, and each lane folds its leaf's n (NOTES
// step 142). Every lane must call it.
template <class Op, bool kRagged = false, class in_t>
__device__ __forceinline__ void fold_leaves_staged_short_runs(const in_t* p0, int64_t s_out, int X,
                                                              int64_t q0, int dq,
                                                              const IndexMap& red, int lane,
                                                              float* stage, typename Op::acc_t& a,
                                                              int n_leaf = kCanonLeaf) {
  if constexpr (stages_unaligned<Op, in_t>()) {
    const int64_t outer = red.sizes[0], run = red.sizes[1], s_outer = red.in_strides[0];
    const int64_t step = int64_t(kCanonLeaf) * dq;  // from one leaf of an output lane to its next
    const int64_t dn = step / run;
    const int dr = static_cast<int>(step % run);
    int64_t n = 0;
    int r = 0;
    const in_t* e = p0;  // element ph + lane of lane u's leaf, from the previous lane's (a chain:
                         // products c * s_out for every u would be 32 live registers)
    fold_leaves_staged_at<Op, in_t, kRagged>(
        [&](int u, int ph) -> const in_t* {
          if (u == 0) {
            const int64_t pos = q0 * kCanonLeaf + ph + lane;
            n = pos / run;
            r = static_cast<int>(pos - n * run);
            e = p0 + n * s_outer + r;
          } else if ((u & (X - 1)) == 0) {  // the next leaf of output lane 0
            n += dn;
            r += dr;
            if (r >= run) {
              r -= static_cast<int>(run);
              ++n;
            }
            e = p0 + n * s_outer + r;
          } else {  // the same leaf of the next output lane
            e += s_out;
          }
          return kRagged && n >= outer ? nullptr : e;  // element pos n x run + r: past K?
        },
        lane, stage, a, n_leaf);
  }
}

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
// load per level instead of kVec in turn (NOTES step 167). counter_result_all needs count > 0:
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
// L1, so each push waited on L2 while the block's other warps waited at the next round's barrier
// (NOTES step 20).
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
// line, the call's register saves put 200-400 local-memory instructions into each caller
// (NOTES step 134).
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

// Whether canon_kernel<Op, ..., vec, ..., kStage = true> fits: its stage beside the tree's
// kCanonThreads * vec accumulators in 48 KB (not four compensated float64 outputs, float32
// into a float64 result).
template <class Op>
constexpr bool canon_stage_fits(int vec) {
  return vec > 1 && vec * sizeof(typename Op::acc_t) <= 32;
}

// Leaves per thread and round that canon_kernel<..., kVec = 1, kPer> is built with: 2 for 1- and
// 2-byte inputs, 1 otherwise. Two leaves per round halve the tree's and the barriers' cost per
// element (float16 full sums +12%, NOTES step 16), and a warp whose lanes' leaf pairs are whole,
// aligned and contiguous folds both side by side: two chains of dependent additions per thread
// instead of one (+7%, step 24). Float32 measured 33% slower with two leaves side by side: each
// phase then reads a quarter of every 256-byte leaf pair region (step 24).
template <class in_t>
constexpr int canon_per() {
  return sizeof(in_t) <= 2 ? 2 : 1;
}

// The split merge of canon_kernel's tile (every thread of the block calls it, after storing the
// block's nodes): counts the block's `left` splits; the tile's last block merges its `splits`
// nodes at `slots` ([split][column], kVec columns per output lane) into thread ty = 0's m.a.
// Thread ty takes splits ty*c .. ty*c + c - 1 (missing ones are the identity) with a counter,
// which over a power-of-two count is the perfect tree; then the tree over ty. Out of line
// (__noinline__), so that its code does not move the register allocation and schedule of
// canon_kernel's fold loop: an edit of the inlined arrival alone measured 5-10% on float32
// throughput launches that never arrive (NOTES steps 62, 64 and 65).
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
  // waited for L2 once per node: NOTES step 29), merged in registers by the perfect tree over
  // the batch (a node of the tree when c >= kB; with c < kB the identities past c leave the
  // tree over c); each batch's node then goes to the counter (a push per node waited on the
  // counter's local memory: step 39). One output lane (X = 1): a batch is 128 bytes per
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
  // splits with 2 shuffle levels instead of 5 and 3 through shared memory (NOTES step 56).
  int ym = 1;
  while (ym < Y && ym * c < splits) ym <<= 1;
  tree_over_y<Op, kVec>(m.a, X, ym, tid, sm);
  return m;
}

// Resident blocks per SM that canon_kernel is compiled for (at most 64 registers for four, 80
// for three): the latency kernel two; column kernels (kVec outputs per thread) four, except
// float32 quads, whose loop spills at 64 registers and measured slower with four ((2097152, 32)
// over dim 0: 87.5 -> 92.5 µs; NOTES step 77); the rest three.
template <class in_t>
constexpr int canon_min_blocks(int vec, bool lat) {
  return lat ? 2 : vec > 1 && !(sizeof(in_t) == 4 && vec == 4) ? 4 : 3;
}

// canon_min_blocks(kVec, kLat) resident blocks per SM (above) keep enough loads in flight.
//
// kStage (kVec > 1): columns whose reduced element's row is exactly a thread's kVec outputs
// (cfg.step = kVec) stage each warp's whole, aligned leaves (fold_leaf_staged with kCols =
// kVec); a template flag, so that the column kernels without it keep their code (the staging's
// branch inlined in them moved their allocation: columns (4096, 4096) and float64 columns 1.5-3%
// slower, NOTES step 73).
//
// kLat: the latency kernel, for launches of at most about one wave (small full sums, long rows;
// the host chooses it, launch.cuh): a block may be X * Y < kCanonThreads threads, a staged
// leaf's two phases are loaded together and a lone lane's leaf in batches of sixteen (one memory
// latency per leaf instead of two), and the splits of a tile are the blocks of one thread-block
// cluster (gridDim.y = splits <= 16, one split each, splits <= Y, splits * X <= kClusterSlots;
// 64 slots fit, but took (8, 65536, 4)'s 16 splits of 4 lanes there, 0.6 µs slower in a CUDA
// graph: NOTES step 110): each block
// stores its node into the shared memory of the cluster's first block (st.async), which waits
// for their bytes on an mbarrier and merges them, in place of the partials in global memory
// and the atomic arrival (merge_tile_splits). The same nodes and the same tree: the bits do not
// change.
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
  constexpr int kPh = kLat ? 2 : 1;         // fold_leaf_staged's phases in flight
  constexpr int kVecBatch = kLat ? 16 : 8;  // fold_leaf_vec's loads in flight
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
  // One float output per thread keeps the round counter's low levels in shared memory (below).
  constexpr bool kSmemRounds = kVec == 1 && sizeof(acc_t) <= 8;
  __shared__ acc_t round_sm[kCanonSmemLevels][kSmemRounds ? 32 : 1];
  acc_t levels[kVec][kCanonLevels];  // local memory: the round counter's upper levels
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int X = cfg.X, Y = cfg.Y;
  const int tx = tid & (X - 1), ty = tid / X;
  const int col = tx * kVec;  // this thread's first column in the tile
  constexpr bool kStageUnaligned = stages_unaligned<Op, in_t>();   // fold_leaf_staged_unaligned
  constexpr bool kShifted = kStageUnaligned && sizeof(in_t) == 2;  // fold_leaves_shifted
  // One float output per thread: the low levels in shared memory, the accessor built where it is
  // used from a fresh read of the thread index, so that none of it stays live across the rounds'
  // loop. Columns (kVec > 1) and double sums keep their counters in local memory: the accessor
  // cost them spills inside that loop (reloads at every round).
  const auto round_levels = [&](int v) {
    if constexpr (kSmemRounds) {
      unsigned t;
      asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
      const int x = static_cast<int>(t) & (cfg.X - 1);
      return RoundLevels<acc_t, 32>{round_sm, x & 31, x < 32, levels[v]};
    } else {
      return LocalLevels<acc_t>{levels[v]};
    }
  };
  const int64_t M = g.num_outputs, K = g.reduce_len;
  const int last = g.red.ndim - 1;
  const int64_t run = g.red.sizes[last];  // the innermost reduced dim (stride cfg.step if > 0)
  // The tile's split nodes, [split][column]: a split's nodes are one contiguous row, so that
  // the stores and the final merge's loads (output lanes tx side by side) are coalesced.
  const int tile_cols = X * kVec;
  const auto tile_slots = [&](int64_t tile) { return partials + tile * tile_cols * cfg.splits; };
  const auto store = [&](int64_t o, const acc_t(&r)[kVec]) {
#pragma unroll
    for (int v = 0; v < kVec; ++v)
      out[g.kept.out_offset(o + v)] = from_acc<out_t>(Op::finalize(r[v], K, M));
  };

  // Work items: (tile, split) pairs. Without splits, blocks stride over the tiles; with them,
  // each tile has gridDim.y blocks that take its splits in turn (a block handles splits y,
  // y + gridDim.y, ...: splits are small powers of two of rounds, so that every block gets
  // nearly the same work, and neighbouring blocks read neighbouring memory).
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
    const in_t* __restrict__ p = in + (active ? g.kept.in_offset(o0) : 0);
    // Leaf q's length (0 past the end or for an inactive output lane), and for leaves inside
    // one run of elements cfg.step apart their address and whether it is aligned (then the leaf
    // spans n * step memory elements).
    const auto leaf_len = [&](int64_t q) {
      const int64_t r0 = q * kCanonLeaf;
      return !active || q >= cfg.leaves
                 ? 0
                 : static_cast<int>(K - r0 < kCanonLeaf ? K - r0 : kCanonLeaf);
    };
    const auto locate = [&](int64_t q) {
      LeafAt<in_t> l{p, leaf_len(q), false, false};
      const int64_t r0 = q * kCanonLeaf;
      if (cfg.step > 0 && l.n > 0 && (g.red.ndim == 1 || (r0 % run) + l.n <= run)) {
        l.in_run = true;
        l.p = p + (g.red.ndim == 1 ? r0 * cfg.step : g.red.in_offset(r0));
        l.vec =
            (reinterpret_cast<uintptr_t>(l.p) & 15) == 0 && l.n * cfg.step % vec_width<in_t>() == 0;
      }
      return l;
    };
    // fold_leaves_shifted for the kernels that have it (16-bit inputs): the warp's kL leaves per
    // lane from `lp`, whole (every lane's `whole`) and shifted alike; false if it did not fold.
    // The warp's lanes are min(X, 32) runs, one per output lane.
    const auto shifted = [&](const in_t* lp, bool whole, auto& b) {
      if constexpr (kShifted) {
        constexpr int kL = std::extent_v<std::remove_reference_t<decltype(b)>>;
        const int log_g = 31 - __clz(min(cfg.X, 32));
        return cfg.step == 1 &&
               fold_leaves_shifted<Op, in_t, kL>(lp, whole, log_g, stage[tid >> 5], b);
      } else {
        return false;
      }
    };
    // kInter: whether the warp's leaves are interleaved (fold_leaves_interleaved): cfg.step =
    // X (4 .. 32), every lane's leaf whole and in its run, lane l's kCanonLeaf X (l / X) + l % X
    // elements past lane 0's, which starts on a 16-byte boundary. Warp-uniform; every lane must
    // call it.
    const auto interleaved = [&](const LeafAt<in_t> l) {
      if (cfg.step < 4 || cfg.step != X || X > 32) return false;
      const in_t* const p0 = shfl_ptr(l.p, 0);
      return __all_sync(kFullMask,
                        l.in_run && l.n == kCanonLeaf &&
                            l.p == p0 + (lane / X) * (kCanonLeaf * X) + (lane & (X - 1))) &&
             (reinterpret_cast<uintptr_t>(p0) & 15) == 0;
    };
    // fold_leaves_staged_short_runs where the innermost reduced dim's runs are shorter than a
    // leaf, or are not whole 16-byte vectors, so that fold_leaf_two_runs's pieces are not
    // aligned for every leaf (bfloat16 runs of 196: 392 bytes; NOTES step 140) (one outer
    // reduced dim): lane l's leaf lane 0's plus (l / X) * kPer leaves, of output lane l % X,
    // whose elements start (l % X) * s_out past output lane 0's; every leaf whole, or else (an
    // output's last leaves: the latency kernel's one warp over a small output, such as bfloat16
    // (4, 3, 10, 10)) ragged, each lane's leaf of its own length, 0 past the last (NOTES step
    // 142). False if it did not fold. Warp-uniform; every lane must call it.
    const auto short_runs = [&](int64_t q, int n, acc_t& b) {
      if constexpr (kStageUnaligned && kVec == 1) {
        if (cfg.step != 1 || g.red.ndim != 2 ||
            (run >= kCanonLeaf && run * int64_t(sizeof(in_t)) % 16 == 0))
          return false;
        const in_t* const p0 = shfl_ptr(p, 0);
        const int64_t s_out = shfl_ptr(p, X > 1 ? 1 : 0) - p0;
        const int64_t q0 = __shfl_sync(kFullMask, q, 0);
        if (!__all_sync(kFullMask,
                        p == p0 + (lane & (X - 1)) * s_out && q == q0 + (lane / X) * kPer) ||
            !__any_sync(kFullMask, n > 0))
          return false;
        float* const st = reinterpret_cast<float*>(stage[tid >> 5]);
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
      } else {
        return false;
      }
    };
    acc_t a[kVec];
    for (int64_t k = k0; k < k1; ++k) {  // block-uniform bounds: tree_over_y synchronises
      // This thread's kPer (= cfg.per) adjacent leaves (2: leaves 2q and 2q + 1, merged first:
      // their node of the tree), each folded in order.
      static_assert(kPer == 1 || kVec == 1, "two leaves per thread only for one output");
      bool paired = false;
      if constexpr (kPer == 2) {
        // Both leaves side by side when the warp's 64 leaves are aligned runs of one length (a
        // multiple of half a piece: each phase stages half a piece of each) and each lane's two
        // are contiguous: two independent chains of dependent additions instead of one after
        // the other (NOTES step 24).
        const int64_t q = (k * Y + ty) * 2;
        const LeafAt<in_t> l0 = locate(q), l1 = locate(q + 1);
        const int n0 = __shfl_sync(kFullMask, l0.n, 0);
        if (__all_sync(kFullMask, l0.vec && l1.vec && l0.n == n0 && l1.n == n0 &&
                                      l1.p == l0.p + n0 * cfg.step) &&
            n0 * cfg.step % (Stage::kPiece / 2) == 0) {
          acc_t b[2] = {Op::identity(), Op::identity()};
          if (cfg.step == 1)
            fold_leaf_staged<Op, in_t, 1, 2>(l0.p, n0, lane, stage[tid >> 5], b, g.evict_first);
          else
            fold_leaf_staged<Op, in_t, 2, 2>(l0.p, 2 * n0, lane, stage[tid >> 5], b, g.evict_first);
          a[0] = Op::combine(b[0], b[1]);
          paired = true;
        } else {
          // The same two leaves, whole and contiguous, every lane's starting the same number of
          // elements past a 16-byte boundary (a view such as x[1:]).
          acc_t b[2] = {Op::identity(), Op::identity()};
          if (shifted(l0.p,
                      l0.in_run && l1.in_run && l0.n == kCanonLeaf && l1.n == kCanonLeaf &&
                          l1.p == l0.p + kCanonLeaf,
                      b)) {
            a[0] = Op::combine(b[0], b[1]);
            paired = true;
          }
        }
      }
#pragma unroll 1
      for (int j = 0; j < (paired ? 0 : kPer); ++j) {
        acc_t b[kVec];
#pragma unroll
        for (int v = 0; v < kVec; ++v) b[v] = Op::identity();
        const int64_t q = (k * Y + ty) * kPer + j;  // the leaf
        if constexpr (kInter) {
          // The warp's leaves: 32 / X whole ones of X interleaved outputs, one run; otherwise
          // (a partial leaf, a run's end) element by element.
          const LeafAt<in_t> l = locate(q);
          if (interleaved(l))
            fold_leaves_interleaved<Op, in_t, kPh>(shfl_ptr(l.p, 0), X, lane, stage[tid >> 5], b[0],
                                                   g.evict_first);
          else if (l.n > 0)
            fold_leaf<Op, in_t, 1>(p, g.red, cfg.one, q * kCanonLeaf, l.n, b, g.evict_first);
        } else if constexpr (kVec == 1) {
          const LeafAt<in_t> l = locate(q);
          const int n = l.n;
          // A warp whose 32 leaves are aligned runs of one length (a multiple of a piece)
          // stages them.
          const int n0 = __shfl_sync(kFullMask, n, 0);
          // Step 2: a leaf one element past a 16-byte boundary is the odd elements of the
          // aligned run that starts one element before it (its even neighbour's: C = 2 mid
          // dims), which stays inside that 16-byte segment (NOTES step 118).
          const bool odd = cfg.step == 2 && l.in_run && n * 2 % vec_width<in_t>() == 0 &&
                           (reinterpret_cast<uintptr_t>(l.p) & 15) == sizeof(in_t);
          if (__all_sync(kFullMask, (l.vec || odd) && n == n0) &&
              n0 * cfg.step % Stage::kPiece == 0) {
            if (cfg.step == 1)
              fold_leaf_staged<Op, in_t, 1, 1, kPh>(l.p, n0, lane, stage[tid >> 5], b,
                                                    g.evict_first);
            else
              fold_leaf_staged<Op, in_t, 2>(odd ? l.p - 1 : l.p, 2 * n0, lane, stage[tid >> 5], b,
                                            g.evict_first, odd);
          } else if (shifted(l.p, l.in_run && n == kCanonLeaf, b)) {
            // Whole 16-bit leaves, every lane's the same number of elements past a 16-byte
            // boundary: folded.
          } else if (kStageUnaligned && cfg.step == 1 &&
                     __all_sync(kFullMask, l.in_run && n == kCanonLeaf)) {
            // Whole leaves, not 16-byte aligned (the condition is warp-uniform, so every lane
            // enters: the function shuffles), kPer * kCanonLeaf elements apart or anywhere.
            fold_leaf_staged_unaligned<Op>(l.p, kPer * kCanonLeaf, lane,
                                           reinterpret_cast<float*>(stage[tid >> 5]), b[0]);
          } else if (short_runs(q, n, b[0])) {
            // Whole leaves over runs shorter than a leaf or of unaligned length: staged.
          } else if (l.vec && cfg.step == 1) {
            fold_leaf_vec<Op, in_t, kVecBatch>(l.p, n, b[0], g.evict_first);
          } else if (n > 0) {
            // A whole leaf across two runs of 16-byte aligned pieces: one batch of loads.
            bool two = false;
            if constexpr (sizeof(in_t) <= 4) {
              const int64_t r0 = q * kCanonLeaf;
              if (cfg.step == 1 && n == kCanonLeaf && g.red.ndim > 1 && run >= kCanonLeaf &&
                  r0 % run + kCanonLeaf > run)
                two = fold_leaf_two_runs<Op, in_t>(p, g.red, r0, run, b[0], g.evict_first);
            }
            if (!two)
              fold_leaf<Op, in_t, 1>(p, g.red, cfg.one, q * kCanonLeaf, n, b, g.evict_first);
          }
        } else {
          // A warp whose 32 leaves are whole, each one 16-byte aligned run of 64 rows of
          // exactly its kVec outputs (cfg.step = kVec: C = 2 or 4 mid dims, two columns),
          // stages them (one lane's leaf per row of the stage, as for rows).
          const int n = leaf_len(q);
          const int64_t r0 = q * kCanonLeaf;
          bool staged = false;
          if constexpr (kStage) {
            const in_t* lp = p + (g.red.ndim == 1 ? r0 * kVec : g.red.in_offset(r0));
            if (__all_sync(kFullMask, cfg.step == kVec && n == kCanonLeaf &&
                                          (g.red.ndim == 1 || r0 % run + n <= run) &&
                                          (reinterpret_cast<uintptr_t>(lp) & 15) == 0)) {
              fold_leaf_staged<Op, in_t, kVec, 1, 1, kVec>(lp, kCanonLeaf * kVec, lane,
                                                           stage[tid >> 5], b, g.evict_first);
              staged = true;
            }
          }
          if (!staged && n > 0)
            fold_leaf<Op, in_t, kVec>(p, g.red, cfg.one, r0, n, b, g.evict_first, k1 - k0 == 1);
        }
#pragma unroll
        for (int v = 0; v < kVec; ++v) a[v] = j == 0 ? b[v] : Op::combine(a[v], b[v]);
      }
      tree_over_y<Op, kVec>(a, X, Y, tid, sm);
      if (ty == 0 && k1 - k0 > 1)  // one round: its node is the split's node
        counter_push_all<Op, kVec>(round_levels, a, k - k0);
    }
    if (ty == 0 && k1 - k0 > 1) counter_result_all<Op, kVec>(round_levels, a, k1 - k0);
    if (kLat && cfg.splits > 1) {  // this split's node, to the cluster's first block
      cluster_wait();  // every block of the cluster has started (every thread takes part)
      if (ty == 0) {
        if (split == 0)  // (the cluster's rank: gridDim.y = splits = the cluster's size)
          cluster_nodes[tx] = a[0];  // read back by this same thread
        else
          cluster_store_async(&cluster_nodes[split * X + tx], a[0], cluster_bar, 0);
      }
      continue;
    }
    if (cfg.splits > 1) {  // leave this split's node; the tile's last arrival merges them
      acc_t* slots = tile_slots(tile);
      if (ty == 0) {
#pragma unroll
        for (int v = 0; v < kVec; ++v) slots[int64_t(split) * tile_cols + col + v] = a[v];
      }
      continue;
    }
    if (ty == 0 && active) store(o0, a);
  }
  if constexpr (kLat) {
    if (cfg.splits > 1) {
      // The tile's splits are the cluster's blocks: once every node is in the first block's
      // shared memory, that block merges them by the tree over the split index (node ty of
      // output lane tx in thread ty * X + tx; missing nodes are the identity). The other blocks
      // are done: their stores complete on the first block's mbarrier.
      if (cluster_rank() != 0) return;
      acc_t a[1] = {merge_cluster_nodes<Op, acc_t>(
          [&] { return ty < cfg.splits ? cluster_nodes[tid] : Op::identity(); }, cluster_bar,
          cfg.splits, X, tid, sm)};
      const int64_t o0 = int64_t(blockIdx.x) * X + tx;
      if (ty == 0 && o0 < M) store(o0, a);
    }
  } else if (cfg.splits > 1) {
    // The block's splits were all of tile blockIdx.x: one arrival for all of them (an arrival per
    // split measured 1-8% of full sums' time, more the shorter the splits); the last block
    // merges the tile's nodes (merge_tile_splits, out of line).
    const unsigned left = (cfg.splits - 1 - blockIdx.y) / gridDim.y + 1;  // splits it took
    const Merged<acc_t, kVec> m = merge_tile_splits<Op, kVec>(
        tile_slots(blockIdx.x), &counters[blockIdx.x], left, cfg.splits, cfg.merge_per_thread, X, Y,
        sm, reinterpret_cast<uint4*>(stage[tid >> 5]));
    const int64_t o0 = (int64_t(blockIdx.x) * X + tx) * kVec;
    if (m.last && ty == 0 && o0 < M) store(o0, m.a);
  }
}

// Whether canon_small_kernel<..., kL> folds whole leaves that start off a 16-byte boundary
// (fold_small_unaligned): the chunked kernels (kL = canon_per, launch.cuh's chunks; and kL = 1
// for 16-bit inputs, also looped, launch.cuh's chunk_per) of the inputs that stage unaligned
// (launch.cuh's chunk_rows).
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
// path, the 16-bit kernels spilled 20 bytes (NOTES step 93). Every lane of the warp must call
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

// canon_small_kernel's node of `K` elements at `p` (at most kL * blockDim.x leaves; every
// thread of the block calls it, thread 0 gets the node): see canon_small_kernel. kFlat: the
// levels across warps in thread 0's registers (tree_over_block; the same additions): the
// chunked full sums 0.7-1.4% faster, but the clustered chunks of rows (64, 65536) and (8,
// 131072) 4-7% slower (NOTES step 133), which keep tree_over_y.
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
    // one keeps its code (this path in the same kernel cost float32 full sums 3.6-6%: NOTES
    // step 93).
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
    // both together measured slower at the same 64 registers (NOTES steps 126 and 128, µs:
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
// side; other leaves with their loads in one batch, or element by element for a last leaf that
// is not a whole number of vectors) and merges them (their node), then the perfect tree over the
// T lanes (tree_over_block; tree_over_y in clusters) and thread 0 stores. The same additions as
// canon_kernel, in a kernel a fraction of its size and without its split, cluster and counter
// paths: a 2^10-element sum took 2.58 µs in a CUDA graph through the latency kernel and 1.84
// through a standalone kernel of this shape (NOTES step 69). kL = 2 (1- and 2-byte inputs,
// rows of 257-512 leaves, as canon_per): bfloat16 rows of 32768 (NOTES step 75). The stage is
// dynamic shared memory, T / 32 warps of LeafStage::kSmallVecs vectors.
//
// Chunked (chunk > 0: longer outputs, such as large full sums): block (x, y) takes chunk x of
// output y, elements [x * chunk, (x + 1) * chunk) with chunk = kL * blockDim.x leaves (64 to
// 256 threads: launch.cuh's chunk_threads), a node of the tree, stores that node in
// partials[y * gridDim.x + x], and the output's last block to arrive merges its gridDim.x
// nodes (merge_tile_splits, merge_per_thread of them per thread: the split merge of
// canon_kernel). The same nodes and tree as canon_kernel's splits,
// in blocks that live for one chunk: full float16 sums of 2^29 291.7 -> 265.8 µs (NOTES step
// 90); canon_small_loop_kernel (below) takes several chunks per block. kUnaligned: chunks that
// start off a 16-byte boundary (views such as x[1:]; launch.cuh's chunk_rows), whole leaves
// through fold_small_unaligned, the rest element by element; and (chunk = 0) outputs of at most
// kL * kCanonThreads leaves that start off a boundary, one block each (launch.cuh's
// small_block: misaligned rows such as (16384, 16384) from a base + 1).
//
// kCluster (aligned chunks, 2 to kChunkCluster per output, one per block: launch.cuh's
// chunk_cluster): an output's chunks are the blocks of one thread-block cluster (along x,
// gridDim.x = chunks = the cluster's size, rank blockIdx.x). Each block stores its node into
// the shared memory of the cluster's first block (st.async, counted on that block's mbarrier),
// which merges them by the same tree over the chunk index and stores the output: in place of
// the partials in global memory, the fence and the atomic arrival, whose round trips took
// about 2 µs after the last block's node (bench/timeline, NOTES step 110). The same nodes and
// tree: the bits do not change; partials and counters go unused.
//
// kWhole: one block per output (chunk must be 0) in an instantiation without the chunks' merge,
// which launch.cuh's launch_small takes for two leaves per thread. With the merge compiled in
// beside it, the same node code ran bfloat16 rows (16384, 32768) at 290.3 µs, against 257.2
// without (NOTES step 151).
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

// Chunks of one leaf per thread, several per block (launch.cuh's chunk_loop: float32 two per
// block from 2048 chunks, 2% faster at 2^28-2^30, NOTES step 101; 16-bit four from 8192
// chunks, 2% faster than two-leaf chunks at float16 2^29, NOTES steps 103-104; kUnaligned:
// 16-bit chunks off a 16-byte boundary, NOTES step 122): block (x, y) takes chunks x,
// x + gridDim.x, ... below `chunks` of output y, each canon_small_kernel's node stored at
// partials[y * chunks + q]: the same nodes, the same tree. A kernel of its own:
// the loop in canon_small_kernel cost its 16-bit chunks 5-9% at any count, at the same
// registers (ptxas then issued 9 of a lane's 16 loads before the first staging store, not 13).
// Bounded to four blocks per SM, the 64 registers canon_small_kernel takes for float32 without
// a bound (unbounded, the loop took 80, and float32 2^24-2^26 ran 3-5% slower). Misaligned
// float32 chunks measured no faster looped (NOTES step 120) and are not instantiated.
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
