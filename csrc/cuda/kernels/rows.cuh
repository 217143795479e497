// rows.cuh: one group of G threads per output, walking that output's reduced elements.
//
// What it computes: out[o] = finalize(reduce over r of in[kept(o) + red(r)]) for every output o.
//
// Work split: a block of 256 threads holds 256/G groups, one output each (G, a power of two from
// 1 to 256, is sized to the row length so that short rows do not leave lanes idle). With kContig
// (the reduced elements are one contiguous run) each thread reads 16-byte vectors, kUnroll of them
// in flight; a row's unaligned head and its tail (fewer than one vector each) are read as scalars.
// Otherwise each thread walks the reduced dims with a Walker, G elements a step, adds and compares
// only (the general strided fallback). When there are too few rows to fill the GPU, each row is also split along K over
// gridDim.y blocks, which combine through arrive_last() in the same launch.
//
// Chosen for: full reductions of contiguous data (M = 1), rows (contiguous inner dim reduced),
// and, with kContig = false, any layout the column kernel does not cover.
//
//   rows_kernel<SumOp<float>, float, float, true><<<grid, 256, 0, stream>>>(in, out, geom, cfg,
//                                                                         partials, counters);
#pragma once
#include "../../geometry.h"
#include "common.cuh"

namespace treduce {

constexpr int kRowsBlock = 256;
constexpr int kUnroll = 4;

struct RowsConfig {
  int group;          // G: threads per output
  int splits;         // S: blocks per output along K; 1 means no cross-block combine
  int64_t per_split;  // vectors (kContig) or elements (strided) per split
  int64_t tiles;      // ceil(M / (kRowsBlock / G))
  StepDigits step;    // G as digits of the reduced dims (strided walk)
};

// This thread's share of split `split` of one output: lanes stride by G through the split.
template <class Op, class in_t, bool kContig>
__device__ __forceinline__ typename Op::acc_t rows_partial(const in_t* __restrict__ row, int64_t K,
                                                           const IndexMap& red, int lane, int G,
                                                           int split, int64_t per_split,
                                                           const StepDigits& step) {
  using acc_t = typename Op::acc_t;
  acc_t acc = Op::identity();
  if constexpr (kContig) {
    constexpr int V = vec_width<in_t>();
    using VecT = Vec<in_t, V>;
    // Elements before the first 16-byte boundary (the address is a multiple of sizeof(in_t)).
    int64_t head = static_cast<int64_t>((16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15) /
                   static_cast<int64_t>(sizeof(in_t));
    if (head > K) head = K;
    const int64_t nvec = (K - head) / V;
    const VecT* vp = reinterpret_cast<const VecT*>(row + head);
    const int64_t v0 = split * per_split;
    const int64_t v1 = v0 + per_split < nvec ? v0 + per_split : nvec;
    int64_t v = v0 + lane;
    for (; v + (kUnroll - 1) * G < v1; v += kUnroll * G) {
      VecT x[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) x[u] = vp[v + u * G];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j) acc = Op::reduce(acc, to_acc<acc_t>(x[u].v[j]));
    }
    for (; v < v1; v += G) {
      const VecT x = vp[v];
#pragma unroll
      for (int j = 0; j < V; ++j) acc = Op::reduce(acc, to_acc<acc_t>(x.v[j]));
    }
    if (split == 0) {
      for (int64_t r = lane; r < head; r += G) acc = Op::reduce(acc, to_acc<acc_t>(row[r]));
      for (int64_t r = head + nvec * V + lane; r < K; r += G)
        acc = Op::reduce(acc, to_acc<acc_t>(row[r]));
    }
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
        for (int u = 0; u < kUnroll; ++u) acc = Op::reduce(acc, to_acc<acc_t>(x[u]));
      }
      for (; r < r1; r += G) acc = Op::reduce(acc, to_acc<acc_t>(row[next()]));
    });
  }
  return acc;
}

template <class Op, class in_t, class out_t, bool kContig>
__global__ void __launch_bounds__(kRowsBlock)
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
      acc = rows_partial<Op, in_t, kContig>(in + g.kept.in_offset(row), g.reduce_len, g.red, lane,
                                            G, split, cfg.per_split, cfg.step);
    acc = group_reduce<Op>(acc, G, smem, tid);
    if (cfg.splits == 1) {
      if (active && lane == 0) out[g.kept.out_offset(row)] = from_acc<out_t>(Op::finalize(acc));
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
    if (active && lane == 0) out[g.kept.out_offset(row)] = from_acc<out_t>(Op::finalize(v));
  }
}

}  // namespace treduce
