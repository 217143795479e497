// canon_stage.cuh: the canonical order's warp-staged leaf loaders: a warp's 32 leaves read with
// coalesced loads into shared memory, then each lane folds its own leaf in order (aligned,
// shifted 16-bit, interleaved, unaligned and short-run layouts). Raw CUDA, nothing from torch.
//
#pragma once
#include "canon_fold.cuh"

namespace treduce {

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
// per tail load. The same additions: each leaf in order from its first
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
        // 2.2-2.7% slower there. kDirect (canon_small_kernel's chunks): fold's,
        // 1.4-1.8% faster there. The same value either way.
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
// lane reading its own 64 rows put 32 lines in every load instruction).
//
// `odd` (kStep = 2, one output per lane): this lane's leaf is the odd elements of its run, which
// starts one element before the leaf (`leaf` is then the element before the leaf's first:
// every second output of C = 2 mid dims, whose leaves start 4 bytes past a 16-byte boundary,
// folded from its even neighbour's aligned run).
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
// +0 from a +0 identity. Then each node of the canonical tree over at most 2^13
// elements is that exact sum, however its elements were grouped.
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
// element, 32 cache lines per warp load (the L1 takes a wavefront per line: 1 TB/s).
// When lane u's leaf is lane 0's plus u * spacing on every lane (full sums, rows of one
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
// fold_leaf, whose walk takes eight memory latencies a leaf.
// The element's (outer, run) position advances from one leaf of an output lane to the next by
// a precomputed quotient and remainder, without a division. kRagged: the leaves need not be
// whole (an output's last leaves; `n` is this lane's leaf's length, 0 past the last): elements
// past the output's K = outer x run are not loaded, and each lane folds its leaf's n. Every lane
// must call it.
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

}  // namespace treduce
