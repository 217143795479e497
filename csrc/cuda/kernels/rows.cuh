// rows.cuh: one group of G threads per output, walking that output's reduced elements.
//
// What it computes: out[o] = finalize(reduce over r of in[kept(o) + red(r)]) for every output o.
//
// Work split: a block of 256 threads holds 256/G groups, one output each (G, a power of two from
// 1 to 256, is sized to the row length so that short rows do not leave lanes idle). With kContig
// each thread reads 16-byte vectors, kUnroll of them in flight: either the reduced elements are
// one contiguous run (a row's unaligned head and its tail, fewer than one vector each, are read
// as scalars), or they are several runs of whole aligned vectors (cfg.vred: the reduced dims with
// the innermost counted in vectors, e.g. (N, H*W) of NCHW statistics), walked with a TwoDimWalker
// where they are two dims, else a Walker.
// With kLoad = kLoadStepTwo the reduced elements are one run at stride 2 (x[..., ::2]): the
// threads read the 16-byte vectors over the run's span, as for a contiguous run, and fold every
// other element of each (V / 2 of them), since the DRAM sectors hold both halves anyway.
// Otherwise (kLoadWalk) each thread walks the reduced dims element by element with a Walker, G
// elements a step, adds and compares only (the general strided fallback). When there are too few
// rows to fill the GPU, each row is also split along K over gridDim.y blocks, which combine through
// arrive_last() in the same launch.
//
// packed_rows_kernel: short rows back to back (K a power of two up to 16 V, a template
// parameter) as one flat stream of vectors: where a 16-byte vector holds V / K whole rows, each
// thread reduces its vectors' rows in registers and stores each vector's results at once, with
// no cross-thread step at all; where a row spans R = K / V vectors, R neighbouring lanes hold it
// and meet by shuffles.
//
// Chosen for: full reductions of contiguous data (M = 1), rows (contiguous inner dim reduced),
// runs of contiguous reduced elements, rows at stride 2, and, with kLoadWalk, any layout the
// column kernel does not cover.
//
//   rows_kernel<SumOp<float>, float, float, kLoadVectors><<<grid, 256, 0, stream>>>(in, out, geom,
//                                                                    cfg, partials, counters);
#pragma once
#include "../../geometry.h"
#include "common.cuh"

namespace treduce {

constexpr int kRowsBlock = 256;
constexpr int kUnroll = 4;

// How rows_kernel reads a row (its kLoad): element by element through the reduced dims' walk;
// 16-byte vectors of one contiguous run (or of runs of whole vectors, RowsConfig::vred); or
// 16-byte vectors over one run at stride 2, every other element of each folded.
constexpr int kLoadWalk = 0;
constexpr int kLoadVectors = 1;
constexpr int kLoadStepTwo = 2;

// The elements of x at positions p, p + kStep, ... (p < kStep): a vector's elements that belong to
// a run at stride kStep, where p is the run's parity within the vector.
template <int kStep, class T, int N>
__device__ __forceinline__ Vec<T, N / kStep> every_nth(const Vec<T, N>& x, int p) {
  if constexpr (kStep == 1) {
    return x;
  } else {
    static_assert(kStep == 2 && N % 2 == 0, "runs at stride 1 or 2");
    Vec<T, N / 2> y;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) y.v[i] = p ? x.v[2 * i + 1] : x.v[2 * i];
    return y;
  }
}

struct RowsConfig {
  int group;          // G: threads per output
  int splits;         // S: blocks per output along K; 1 means no cross-block combine
  int64_t per_split;  // vectors (runs of vectors) or elements (strided) per split; contiguous
                      // rows interleave their splits by chunks instead
  int64_t tiles;      // ceil(M / (kRowsBlock / G))
  StepDigits step;    // G as digits of the map walked: `vred` (runs of vectors) or the reduced dims
  IndexMap vred;      // runs of vectors: the reduced dims, innermost in vectors (ndim 1 otherwise)
};

// walk_offsets for runs of vectors (vred, at least two dims): two dims, the usual case, with a
// TwoDimWalker, whose step costs a few instructions where Walker's costs tens. The fp8 block view
// (99, 128, 50, 128) float32 amax over (1, 3) read at 59% of DRAM's peak through Walker, the
// same bytes as contiguous rows at 85% (H100, ncu).
template <class Body>
__device__ __forceinline__ void walk_runs(const IndexMap& m, int64_t r, const StepDigits& digits,
                                          Body&& body) {
  if (m.ndim == 2) {
    TwoDimWalker w(m, r, digits);
    body([&] { return w.next(); });
  } else {
    walk_walker(m, r, digits, body);
  }
}

// This thread's share of split `split` of one output: lanes stride by G through the split.
template <class Op, class in_t, int kLoad>
__device__ __forceinline__ typename Op::acc_t rows_partial(const in_t* __restrict__ row, int64_t K,
                                                           const IndexMap& red, int lane, int G,
                                                           int split, int splits, int64_t per_split,
                                                           const StepDigits& step,
                                                           const IndexMap& vred, bool ef) {
  constexpr int V = vec_width<in_t>();
  using VecT = Vec<in_t, V>;
  constexpr int kStep = kLoad == kLoadStepTwo ? 2 : 1;  // the run's stride, in elements
  ThreadFold<Op, in_t, V / kStep> f;
  if constexpr (kLoad != kLoadWalk) {
    if constexpr (kStep == 1) {
      // Runs of whole, aligned vectors: vector v holds elements v*V .. v*V+V-1.
      if (vred.ndim > 1) {
        const int64_t nvec = K / V;
        const int64_t v0 = split * per_split;
        const int64_t v1 = v0 + per_split < nvec ? v0 + per_split : nvec;
        walk_runs(vred, v0 + lane, step, [&](auto&& next) {
          int64_t v = v0 + lane;
          for (; v + (kUnroll - 1) * G < v1; v += kUnroll * G) {
            VecT x[kUnroll];
            const uint64_t pol = load_policy<VecT>(ef);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u)
              x[u] = load_in(reinterpret_cast<const VecT*>(row + next()), pol);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) f.vec(x[u], (v + u * G) * V);
          }
          for (; v < v1; v += G)
            f.vec(load_in(reinterpret_cast<const VecT*>(row + next()), load_policy<VecT>(ef)),
                  v * V);
        });
        return f.result();
      }
    }
    // The head (elements before the first 16-byte boundary; the address is a multiple of
    // sizeof(in_t)), whole vectors, the tail: element r at row[r * kStep].
    const RunVectors<kStep, V> rv(
        static_cast<int64_t>((16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15) /
            static_cast<int64_t>(sizeof(in_t)),
        K);
    const int64_t nvec = rv.nvec;
    const VecT* vp = reinterpret_cast<const VecT*>(row + rv.head);
    // Each thread folds its elements in increasing r: head, vectors, tail. The `splits` blocks of
    // a row take chunks of kUnroll * G vectors in turn, so that they sweep the row together
    // (neighbouring DRAM pages are read at about the same time) instead of each streaming a
    // region of its own.
    if (split == 0)
      for (int64_t r = lane; r < rv.head_end(); r += G) f.one(row[r * kStep], r);
    const int64_t chunk = int64_t(kUnroll) * G;
    const int64_t stride = int64_t(splits) * chunk;
    for (int64_t base = split * chunk; base < nvec; base += stride) {
      VecT x[kUnroll];
      const uint64_t pol = load_policy<VecT>(ef);
      if (base + chunk <= nvec) {  // a whole chunk: no clamps, no predicates
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) x[u] = load_in(vp + base + u * G + lane, pol);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          f.vec(every_nth<kStep>(x[u], rv.p), rv.first_r(base + u * G + lane));
        continue;
      }
      // The partial last chunk: a load past the end re-reads the last vector (clamped, so the
      // loads stay unconditional and all in flight) and is not folded.
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t v = base + u * G + lane;
        x[u] = load_in(vp + (v < nvec ? v : nvec - 1), pol);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * G + lane < nvec)
          f.vec(every_nth<kStep>(x[u], rv.p), rv.first_r(base + u * G + lane));
    }
    if (split == 0)
      for (int64_t r = rv.tail_begin() + lane; r < K; r += G) f.one(row[r * kStep], r);
  } else {
    const int64_t r0 = split * per_split;
    const int64_t r1 = r0 + per_split < K ? r0 + per_split : K;
    walk_offsets(red, r0 + lane, G, step, [&](auto&& next) {
      int64_t r = r0 + lane;
      for (; r + (kUnroll - 1) * G < r1; r += kUnroll * G) {
        in_t x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) x[u] = row[next()];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) f.one(x[u], r + u * G);
      }
      for (; r < r1; r += G) f.one(row[next()], r);
    });
  }
  return f.result();
}

// At most 64 registers, so that 4 blocks (1024 threads) share an SM: latency-bound sizes (a
// vocabulary argmax) need the loads in flight more than the registers.
template <class Op, class in_t, class out_t, int kLoad>
__global__ void __launch_bounds__(kRowsBlock, 4)
    rows_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                const RowsConfig cfg, typename Op::acc_t* __restrict__ partials,
                unsigned* __restrict__ counters) {
  using acc_t = typename Op::acc_t;
  __shared__ acc_t smem[kRowsBlock];
  const int tid = threadIdx.x;
  const int G = cfg.group;
  const int lane = tid & (G - 1);
  const int group = tid / G;
  const int rows_per_block = kRowsBlock / G;
  const int split = blockIdx.y;

  for (int64_t tile = blockIdx.x; tile < cfg.tiles; tile += gridDim.x) {
    const int64_t row = tile * rows_per_block + group;
    const bool active = row < g.num_outputs;
    acc_t acc = Op::identity();
    if (active)
      acc = rows_partial<Op, in_t, kLoad>(in + g.kept.in_offset(row), g.reduce_len, g.red, lane, G,
                                          split, cfg.splits, cfg.per_split, cfg.step, cfg.vred,
                                          g.evict_first);
    acc = group_reduce<Op>(acc, G, smem, tid);
    if (cfg.splits == 1) {
      if (active && lane == 0)
        out[g.kept.out_offset(row)] =
            from_acc<out_t>(Op::finalize(acc, g.reduce_len, g.num_outputs));
      continue;
    }
    // Split rows: every block leaves its partial; the last block of the tile combines them.
    acc_t* slot = partials + (tile * rows_per_block + group) * cfg.splits;
    if (active && lane == 0) slot[split] = acc;
    if (!arrive_last(&counters[tile], cfg.splits)) continue;
    acc_t v = Op::identity();
    if (active)
      for (int s = lane; s < cfg.splits; s += G) v = Op::combine(v, load_cg(slot + s));
    v = group_reduce<Op>(v, G, smem, tid);
    if (active && lane == 0)
      out[g.kept.out_offset(row)] = from_acc<out_t>(Op::finalize(v, g.reduce_len, g.num_outputs));
  }
}

// Rows of kK elements back to back (kK a power of two, 2 <= kK <= 16 V), the input 16-byte
// aligned and the output contiguous, read as one flat stream of 16-byte vectors (kUnroll in
// flight per thread, a grid stride apart).
// - kK <= V: vector i holds rows i*P .. i*P+P-1 (P = V / kK), and their P results leave in one
//   store. `nvec` whole vectors; the last M - nvec*P rows (fewer than P) are read as scalars by
//   the first thread.
// - kK > V: a row is R = kK / V consecutive vectors, held by R neighbouring lanes (the grid
//   stride is a multiple of the warp), each of which folds its vector in order; the perfect tree
//   over the R lanes (shuffles, lower lanes first) leaves the row on its first lane, which
//   stores it. bfloat16 amax rows of 16 went through rows_kernel one thread per row, two loads
//   in flight: 65% of the read stream. The loops are warp-uniform (the
//   shuffles need every lane); a lane past the end re-reads the last vector and stores nothing.
template <class Op, class in_t, class out_t, int kK>
__global__ void __launch_bounds__(kRowsBlock)
    packed_rows_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const Geometry g,
                       int64_t nvec) {
  using acc_t = typename Op::acc_t;
  constexpr int V = vec_width<in_t>();
  using VecT = Vec<in_t, V>;
  const int64_t M = g.num_outputs;
  const VecT* __restrict__ vp = reinterpret_cast<const VecT*>(in);
  const int64_t stride = int64_t(gridDim.x) * kRowsBlock;
  int64_t i = int64_t(blockIdx.x) * kRowsBlock + threadIdx.x;
  // Vectors i0, i0 + stride, ..., kUnroll of them in flight, then use(x, index) on each.
  const auto batch = [&](int64_t i0, auto&& use) {
    VecT x[kUnroll];
    const uint64_t pol = load_policy<VecT>(g.evict_first);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = load_in(vp + i0 + u * stride, pol);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) use(x[u], i0 + u * stride);
  };
  if constexpr (kK > V) {
    constexpr int R = kK / V;
    const int part = static_cast<int>(threadIdx.x) & (R - 1);
    auto row_of = [&](const VecT& x, int64_t i) {  // vector i: part `part` of row i / R
      ThreadFold<Op, in_t, V> f;  // (16-bit max/min: packed pairs, as rows_kernel's)
      f.vec(x, part * V);
      acc_t acc = f.result();
#pragma unroll
      for (int s = 1; s < R; s *= 2) acc = Op::combine(acc, shfl_down(acc, s, R));
      if (part == 0 && i < nvec) out[i / R] = from_acc<out_t>(Op::finalize(acc, kK, M));
    };
    // i | 31: the warp's last lane (block and stride are multiples of 32).
    for (; (i | 31) + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) batch(i, row_of);
    for (; (i & ~int64_t(31)) < nvec; i += stride)
      row_of(load_in(vp + (i < nvec ? i : nvec - 1), load_policy<VecT>(g.evict_first)), i);
  } else {
    constexpr int P = V / kK;
    using OutT = Vec<out_t, P>;
    auto rows_of = [&](const VecT& x, int64_t i) {  // the P rows of vector i
      OutT res;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        acc_t acc = Op::identity();
#pragma unroll
        for (int k = 0; k < kK; ++k) acc = fold<Op>(acc, x.v[p * kK + k], k);
        res.v[p] = from_acc<out_t>(Op::finalize(acc, kK, M));
      }
      reinterpret_cast<OutT*>(out)[i] = res;
    };
    for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) batch(i, rows_of);
    for (; i < nvec; i += stride) rows_of(load_in(vp + i, load_policy<VecT>(g.evict_first)), i);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      for (int64_t row = nvec * P; row < M; ++row) {
        acc_t acc = Op::identity();
        for (int k = 0; k < kK; ++k) acc = fold<Op>(acc, in[row * kK + k], k);
        out[row] = from_acc<out_t>(Op::finalize(acc, kK, M));
      }
    }
  }
}

}  // namespace treduce
