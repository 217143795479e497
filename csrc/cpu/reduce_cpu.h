// reduce_cpu.h: the CPU backend's kernels: the same plan and op functors as CUDA, multithreaded
// with at::parallel_for.
//
// Each output's K elements, in logical order for floating sums, means and products, are cut into
// leaves of kLeaf = 64 elements at fixed positions; leaves are merged by the perfect binary tree
// over leaf index (a binary-counter cascade inside chunks of kChunk elements, then a pairwise
// tree over the chunks, which is the same tree). Floating sums and means fold each leaf in order
// (in double, WideSumOp; float64 in compensated pairs, CompSumOp), and floating products too
// (CanonProdOp): the canonical order of docs/numerics.md, whose bits depend only on the
// values in logical order and K, never on the thread count or the layout. The other ops (exact
// in any order) fold a leaf with eight interleaved accumulators, which vectorises; max/min of
// float32/float64 do it with SSE2 lanes (the compiler leaves their NaN-aware select scalar: 25x
// slower than torch.amax before).
//
// Header-only templates, instantiated per op family in units of their own (families.h), which
// compile side by side; reduce_cpu.cpp registers them.
#pragma once
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <emmintrin.h>

#include "../dispatch.h"
#include "../plan.h"
#include "../reduce_ops.h"
#include "extreme_leaves.h"
#include "sse_extreme.h"
#include "sum_leaves.h"

namespace treduce {
namespace cpu_reduce {

constexpr int64_t kLeaf = kCanonLeaf;  // reduce_ops.h
constexpr int64_t kChunk = 16384;      // 256 leaves: chunks are nodes of the leaf tree

// Ops whose leaves are folded strictly in order (the sums and means): the canonical order.
template <class Op>
constexpr bool kSequentialLeaves = is_canonical<Op>::value;

// Merges partials[0..n) with a fixed pairwise tree: (p0 p1) (p2 p3) ... then the pairs, etc.
template <class Op>
typename Op::acc_t tree_combine(typename Op::acc_t* p, int64_t n) {
  for (int64_t width = 1; width < n; width *= 2)
    for (int64_t i = 0; i + width < n; i += 2 * width) p[i] = Op::combine(p[i], p[i + width]);
  return n > 0 ? p[0] : Op::identity();
}

// The same tree over a power-of-two count known at compile time, as one expression whose nodes
// stay in registers: (p0 p1) (p2 p3) ..., the same combines in the same order. The loop above
// keeps its nodes in memory, a store and a load between dependent additions: for a batch of
// eight float32 leaves that tree took about an eighth of a sum's time on one thread.
template <class Op, int N>
typename Op::acc_t tree_combine_pow2(const typename Op::acc_t* p) {
  static_assert(N > 0 && (N & (N - 1)) == 0, "a power of two");
  if constexpr (N == 1)
    return p[0];
  else
    return Op::combine(tree_combine_pow2<Op, N / 2>(p), tree_combine_pow2<Op, N / 2>(p + N / 2));
}

// One element into an accumulator; the arg ops also take the element's logical index r.
template <class Op>
typename Op::acc_t fold(typename Op::acc_t a, typename Op::value_t v, int64_t r) {
  if constexpr (Op::kNeedsIndex)
    return Op::reduce(a, v, r);
  else
    return Op::reduce(a, v);
}

// Binary-counter pairwise merging: push leaf j, merging equal-sized partials as it goes, so that
// the partials form the same tree as tree_combine over all leaves (for a power-of-two count) with
// O(log n) state. `W` outputs are carried side by side.
template <class Op, int W>
struct Cascade {
  using acc_t = typename Op::acc_t;
  acc_t level[24][W];
  int64_t count = 0;  // leaves pushed
  // A node of 2^height leaves (a leaf: height 0); count must be a multiple of 2^height.
  void push(acc_t* node, int height = 0) {
    int l = height;
    for (int64_t c = count >> height; c & 1; c >>= 1, ++l)
      for (int w = 0; w < W; ++w) node[w] = Op::combine(level[l][w], node[w]);
    for (int w = 0; w < W; ++w) level[l][w] = node[w];
    count += int64_t(1) << height;
  }
  void result(acc_t* out) {  // merge what is left, smallest (latest) partials last
    bool any = false;
    for (int w = 0; w < W; ++w) out[w] = Op::identity();
    for (int l = 0; l < 24; ++l) {
      if (!((count >> l) & 1)) continue;
      for (int w = 0; w < W; ++w) out[w] = any ? Op::combine(level[l][w], out[w]) : level[l][w];
      any = true;
    }
  }
};

// The instruction set of the vector paths (sum_leaves.h, extreme_leaves.h): the one torch's own CPU
// kernels use (at::get_cpu_capability(), which torch's ATEN_CPU_CAPABILITY environment variable
// lowers: the tests run each level that way), where this CPU has it.
inline cpu::Isa leaf_isa() {
  static const cpu::Isa isa = [] {
#if defined(__x86_64__)
    const std::string cap = at::get_cpu_capability();
    if (cap == "AVX512" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
      return cpu::Isa::kAvx512;
    if ((cap == "AVX512" || cap == "AVX2") && __builtin_cpu_supports("avx2"))
      return cpu::Isa::kAvx2;
#endif
    return cpu::Isa::kScalar;
  }();
  return isa;
}

// Whether exact_leaves serves Op over in_t: the float64 leaf sums of float32 and bfloat16 inputs.
template <class Op, class in_t>
constexpr bool kExactLeaves = kSequentialLeaves<Op> && std::is_same_v<typename Op::acc_t, double> &&
                              std::is_same_v<typename Op::value_t, float> &&
                              (std::is_same_v<in_t, float> || std::is_same_v<in_t, c10::BFloat16>);

// Whether comp_leaves serves Op over in_t: the compensated leaves of float64 sums and means.
template <class Op, class in_t>
constexpr bool kCompLeaves = kSequentialLeaves<Op> && std::is_same_v<in_t, double> &&
                             std::is_same_v<typename Op::acc_t, Compensated<double>>;

// Whether arg_leaves serves Op over in_t: argmax/argmin of float32 and float64.
template <class Op>
struct arg_extreme : std::false_type {};
template <class T, bool kMax>
struct arg_extreme<ArgExtremeOp<T, kMax>> : std::true_type {
  static constexpr bool max = kMax;
};
template <class Op, class in_t>
constexpr bool kArgLeaves = arg_extreme<Op>::value && std::is_same_v<in_t, typename Op::value_t> &&
                            (std::is_same_v<in_t, float> || std::is_same_v<in_t, double>);

template <int kLeaves, class in_t>
inline int64_t exact_leaves(const in_t* p, int64_t nb, double* out) {
  if constexpr (std::is_same_v<in_t, float>)
    return cpu::exact_leaves<kLeaves>(leaf_isa(), p, nb, out);
  else
    return cpu::exact_leaves<kLeaves>(leaf_isa(), reinterpret_cast<const uint16_t*>(p), nb, out);
}

#if defined(__SSE2__)
// Eight whole float32 leaves (p[0 .. 8*kLeaf)) into their double sums (WideSumOp), one leaf per
// double lane, four vectors of two. Each lane adds its leaf's elements, widened, in order, so the
// bits are those of the scalar loop; loads of four consecutive elements of four leaves are
// transposed so that lane l sees leaf l's elements in order.
inline void eight_float_leaves(const float* p, double* out) {
  __m128d s[4] = {_mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd()};
  for (int64_t j = 0; j < kLeaf; j += 4) {
    for (int g = 0; g < 2; ++g) {
      const float* q = p + g * 4 * kLeaf + j;
      __m128 v0 = _mm_loadu_ps(q), v1 = _mm_loadu_ps(q + kLeaf);
      __m128 v2 = _mm_loadu_ps(q + 2 * kLeaf), v3 = _mm_loadu_ps(q + 3 * kLeaf);
      _MM_TRANSPOSE4_PS(v0, v1, v2, v3);  // v_k: element j + k of leaves 4g .. 4g + 3
      for (__m128 v : {v0, v1, v2, v3}) {
        s[2 * g] = _mm_add_pd(s[2 * g], _mm_cvtps_pd(v));  // leaves 4g, +1
        s[2 * g + 1] = _mm_add_pd(s[2 * g + 1], _mm_cvtps_pd(_mm_movehl_ps(v, v)));  // +2, +3
      }
    }
  }
  for (int k = 0; k < 4; ++k) _mm_storeu_pd(out + 2 * k, s[k]);
}

// An amax's or amin's whole contiguous leaves from element r of `p0` on, eight at a time: the
// batch's extreme in vector lanes (extreme_leaves.h), pushed as one node of the leaf tree, or,
// where that could differ from the in-order bits (a NaN, a zero result), the batch four or two
// leaves at a time through extreme_leaves(). The cascade must stand at a multiple of eight
// leaves (a chunk's start). Returns the first element it left.
template <class Op, class in_t>
int64_t push_extreme_batches(const in_t* p0, int64_t r, int64_t r1, Cascade<Op, 1>& cascade) {
  using acc_t = typename Op::acc_t;
  constexpr bool kMax = sse_extreme<Op>::max;
  constexpr int kBatch = 8, kHeight = 3;  // kBatch = 2^kHeight leaves
  constexpr int kLeaves = SseOf<typename Op::value_t>::kLanes;
  constexpr int n = kBatch * kLeaf;
  for (; r + n <= r1; r += n) {
    const in_t* p = p0 + r;
    acc_t node;
    bool done;
    if constexpr (std::is_same_v<in_t, c10::BFloat16>)
      done = cpu::extreme_run<kMax>(leaf_isa(), reinterpret_cast<const uint16_t*>(p), n, &node);
    else
      done = cpu::extreme_run<kMax>(leaf_isa(), p, n, &node);
    if (done) {
      cascade.push(&node, kHeight);
      continue;
    }
    for (int l = 0; l < kBatch; l += kLeaves) {
      acc_t a[kLeaves];
      extreme_leaves<Op, kLeaves>(p + l * kLeaf, a);
      for (int k = 0; k < kLeaves; ++k) cascade.push(&a[k]);
    }
  }
  return r;
}
#endif

// Batches of exact leaves that one call of exact_leaves takes: 128 leaves, 1 KB of sums on the
// stack (the call's own cost is then spread; see cpu::exact_batches).
constexpr int64_t kExactRun = 16;

// A canonical sum's whole contiguous leaves from element r of `p0` on, eight at a time: eight
// independent in-order chains, interleaved for the pipeline (each leaf's own order is
// unchanged), merged by their subtree of the leaf tree and pushed as one node. The cascade
// must stand at a multiple of eight leaves (a chunk's start). Returns the first element it left.
template <class Op, class in_t>
int64_t push_leaf_batches(const in_t* p0, int64_t r, int64_t r1, Cascade<Op, 1>& cascade) {
  using acc_t = typename Op::acc_t;
  using value_t = typename Op::value_t;
  constexpr int kBatch = 8, kHeight = 3;  // kBatch = 2^kHeight leaves
  const auto push = [&](const acc_t* a) {
    acc_t node = tree_combine_pow2<Op, kBatch>(a);
    cascade.push(&node, kHeight);
  };
  while (r + kBatch * kLeaf <= r1) {
    if constexpr (kExactLeaves<Op, in_t>) {  // runs of exact batches, many a call
      acc_t run[kExactRun * kBatch];
      const int64_t want = std::min<int64_t>(kExactRun, (r1 - r) / (kBatch * kLeaf));
      const int64_t got = exact_leaves<kBatch>(p0 + r, want, run);
      for (int64_t b = 0; b < got; ++b) push(run + b * kBatch);
      r += got * kBatch * kLeaf;
      if (got == want) continue;
    }
    // One batch: where its leaves are not exact together, leaf by leaf (they prefetch), else in
    // order.
    const in_t* p = p0 + r;
    acc_t a[kBatch];
    bool done = false;
    if constexpr (kExactLeaves<Op, in_t>) {
      for (int l = 0; l < kBatch; ++l) {
        if (exact_leaves<1>(p + l * kLeaf, 1, &a[l]) == 0) break;
        done = l == kBatch - 1;
      }
    } else if constexpr (kCompLeaves<Op, in_t>) {
      done = cpu::comp_leaves<kBatch>(leaf_isa(), p, a);
      if (!done) cpu::prefetch_ahead(p, kBatch * kLeaf * sizeof(in_t));
    } else {
      cpu::prefetch_ahead(p, kBatch * kLeaf * sizeof(in_t));
    }
    if (!done) {
#if defined(__SSE2__)
      if constexpr (std::is_same_v<in_t, float> && std::is_same_v<value_t, float> &&
                    std::is_same_v<acc_t, double>) {
        eight_float_leaves(p, a);
      } else
#endif
      {
        for (int l = 0; l < kBatch; ++l) a[l] = Op::identity();
        for (int64_t j = 0; j < kLeaf; ++j)
          for (int l = 0; l < kBatch; ++l)
            a[l] = Op::reduce(a[l], static_cast<value_t>(p[l * kLeaf + j]));
      }
    }
    push(a);
    r += kBatch * kLeaf;
  }
  return r;
}

// Contiguous elements p[0 .. n) (logical indices r ..) of an op that is exact in any order, with
// eight interleaved accumulators (a plain pointer loop that the compiler vectorises) merged by a
// fixed tree.
template <class Op, class in_t>
typename Op::acc_t interleaved_leaf(const in_t* p, int64_t r, int64_t n) {
  using acc_t = typename Op::acc_t;
  using value_t = typename Op::value_t;
  acc_t a[8];
  for (int l = 0; l < 8; ++l) a[l] = Op::identity();
  cpu::prefetch_ahead(p, n * sizeof(in_t));
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) a[l] = fold<Op>(a[l], static_cast<value_t>(p[j + l]), r + j + l);
  for (; j < n; ++j) a[j & 7] = fold<Op>(a[j & 7], static_cast<value_t>(p[j]), r + j);
  return Op::combine(Op::combine(Op::combine(a[0], a[1]), Op::combine(a[2], a[3])),
                     Op::combine(Op::combine(a[4], a[5]), Op::combine(a[6], a[7])));
}

// An argmax's or argmin's whole contiguous leaves from element r of `p0` on, eight at a time in
// vector lanes (extreme_leaves.h), each batch pushed as one node of the leaf tree; a batch with a
// NaN is folded leaf by leaf in order. The cascade must stand at a multiple of eight leaves (a
// chunk's start). Returns the first element it left.
template <class Op, class in_t>
int64_t push_arg_batches(const in_t* p0, int64_t r, int64_t r1, Cascade<Op, 1>& cascade) {
  using acc_t = typename Op::acc_t;
  constexpr int kBatch = 8, kHeight = 3;  // kBatch = 2^kHeight leaves
  constexpr int n = kBatch * kLeaf;
  for (; r + n <= r1; r += n) {
    const in_t* p = p0 + r;
    int64_t k;
    if (cpu::arg_leaves<arg_extreme<Op>::max>(leaf_isa(), p, n, &k)) {
      acc_t node{p[k], r + k};
      cascade.push(&node, kHeight);
      continue;
    }
    for (int l = 0; l < kBatch; ++l) {
      acc_t leaf = interleaved_leaf<Op>(p + l * kLeaf, r + l * kLeaf, kLeaf);
      cascade.push(&leaf);
    }
  }
  return r;
}

// Leaf [r, r + n) of one output whose kept offset is `base` (`w` at element r unless the leaf is
// contiguous): in order for a canonical sum, otherwise with eight interleaved accumulators (a
// plain pointer loop that the compiler vectorises).
template <class Op, class in_t>
typename Op::acc_t fold_one_leaf(const in_t* in, int64_t base, const IndexMap& red,
                                 const StepDigits& one, Walker& w, bool contiguous, int64_t r,
                                 int64_t n) {
  using acc_t = typename Op::acc_t;
  using value_t = typename Op::value_t;
  if constexpr (kSequentialLeaves<Op>) {
    acc_t leaf = Op::identity();
    if (contiguous) {
      const in_t* p = in + base + r;
      for (int64_t j = 0; j < n; ++j) leaf = Op::reduce(leaf, static_cast<value_t>(p[j]));
    } else {
      for (int64_t j = 0; j < n; ++j, w.advance(red, one))
        leaf = Op::reduce(leaf, static_cast<value_t>(in[base + w.offset(red)]));
    }
    return leaf;
  } else {
    if (contiguous) return interleaved_leaf<Op>(in + base + r, r, n);
    acc_t a[8];
    for (int l = 0; l < 8; ++l) a[l] = Op::identity();
    for (int64_t j = 0; j < n; ++j, w.advance(red, one))
      a[j & 7] = fold<Op>(a[j & 7], static_cast<value_t>(in[base + w.offset(red)]), r + j);
    return Op::combine(Op::combine(Op::combine(a[0], a[1]), Op::combine(a[2], a[3])),
                       Op::combine(Op::combine(a[4], a[5]), Op::combine(a[6], a[7])));
  }
}

// Elements [r0, r1) of one output whose kept offset is `base`: leaves of kLeaf elements merged by
// the cascade, the whole contiguous ones first in batches where an op has them.
template <class Op, class in_t>
typename Op::acc_t reduce_chunk(const in_t* in, int64_t base, const IndexMap& red, int64_t r0,
                                int64_t r1) {
  using acc_t = typename Op::acc_t;
  Cascade<Op, 1> cascade;
  const bool contiguous = red.ndim == 1 && red.in_strides[0] == 1;
  const StepDigits one = step_digits(red, 1);
  Walker w(red, r0);
  int64_t r = r0;
  if constexpr (kSequentialLeaves<Op>) {
    if (contiguous) r = push_leaf_batches<Op>(in + base, r, r1, cascade);
  }
  if constexpr (kArgLeaves<Op, in_t>) {
    if (contiguous) r = push_arg_batches<Op>(in + base, r, r1, cascade);
  }
#if defined(__SSE2__)
  if constexpr (kSseLeaves<Op, in_t>) {  // whole contiguous leaves, 16 lanes at a time
    // Four float leaves (2 vectors each) or two double leaves (4 each): eight accumulator
    // vectors; four double leaves (16 vectors) ran out of SSE registers.
    constexpr int kLeaves = SseOf<typename Op::value_t>::kLanes;
    if (contiguous) {
      r = push_extreme_batches<Op>(in + base, r, r1, cascade);
      for (; r + kLeaves * kLeaf <= r1; r += kLeaves * kLeaf) {
        acc_t a[kLeaves];
        extreme_leaves<Op, kLeaves>(in + base + r, a);
        for (int l = 0; l < kLeaves; ++l) cascade.push(&a[l]);
      }
    }
  }
#endif
  for (; r < r1; r += kLeaf) {
    acc_t leaf = fold_one_leaf<Op>(in, base, red, one, w, contiguous, r, std::min(kLeaf, r1 - r));
    cascade.push(&leaf);
  }
  acc_t out;
  cascade.result(&out);
  return out;
}

// The column layout: kTile neighbouring outputs (stride 1 in the input) share every reduced
// offset, so one pass over the reduced elements feeds all of them with unit-stride loads. Each
// output gets sequential leaves of kLeaf elements merged pairwise.
constexpr int kTile = 64;

template <class Op, class in_t>
void reduce_chunk_tile(const in_t* in, int64_t base, int width, const IndexMap& red, int64_t r0,
                       int64_t r1, typename Op::acc_t* out) {
  using acc_t = typename Op::acc_t;
  using value_t = typename Op::value_t;
  Cascade<Op, kTile> cascade;
  const StepDigits one = step_digits(red, 1);
  Walker w(red, r0);
  for (int64_t r = r0; r < r1; r += kLeaf) {
    const int64_t n = std::min(kLeaf, r1 - r);
    acc_t a[kTile];
    for (int w = 0; w < kTile; ++w) a[w] = Op::identity();
#if defined(__SSE2__)
    if constexpr (kSseTiles<Op, in_t>) {  // a whole tile: kTile neighbouring lanes per load
      if (width == kTile) {
        using S = SseOf<in_t>;
        constexpr int W = S::kLanes;
        constexpr bool kMax = sse_extreme<Op>::max;
        typename S::V v[kTile / W];
        // The fast pass (returns whether it met a NaN), then the exact selects if it did.
        const Walker w0 = w;
        const auto fold = [&](auto exact) {
          constexpr bool kExact = decltype(exact)::value;
          typename S::V nan = S::splat(in_t(0));
          w = w0;
          for (int u = 0; u < kTile / W; ++u) v[u] = S::splat(Op::identity());
          for (int64_t j = 0; j < n; ++j, w.advance(red, one)) {
            const in_t* p = in + base + w.offset(red);
            for (int u = 0; u < kTile / W; ++u)
              v[u] = extreme_step<kMax, kExact>(v[u], S::load(p + u * W), nan);
          }
          return any_lane(nan);
        };
        if (fold(std::false_type{})) fold(std::true_type{});
        for (int u = 0; u < kTile / W; ++u) S::store(a + u * W, v[u]);
        cascade.push(a);
        continue;
      }
    }
#endif
    if constexpr (kExactLeaves<Op, in_t>) {  // the canonical sums: W outputs a vector
      if (width == kTile && leaf_isa() != cpu::Isa::kScalar) {
        int64_t rows[kLeaf];
        for (int64_t j = 0; j < n; ++j, w.advance(red, one)) rows[j] = w.offset(red);
        if constexpr (std::is_same_v<in_t, float>)
          cpu::tile_leaf<kTile>(leaf_isa(), in + base, rows, int(n), a);
        else
          cpu::tile_leaf<kTile>(leaf_isa(), reinterpret_cast<const uint16_t*>(in + base), rows,
                                int(n), a);
        cascade.push(a);
        continue;
      }
    }
    for (int64_t j = 0; j < n; ++j, w.advance(red, one)) {
      const in_t* p = in + base + w.offset(red);
      if (width == kTile) {
        for (int w = 0; w < kTile; ++w) a[w] = fold<Op>(a[w], static_cast<value_t>(p[w]), r + j);
      } else {
        for (int w = 0; w < width; ++w) a[w] = fold<Op>(a[w], static_cast<value_t>(p[w]), r + j);
      }
    }
    cascade.push(a);
  }
  cascade.result(out);
}

template <class Op, class in_t, class out_t>
void reduce_cpu(const Plan& plan, at::Tensor& out) {
  using acc_t = typename Op::acc_t;
  const Geometry& g = plan.geom;
  const in_t* in = plan.input.const_data_ptr<in_t>();
  out_t* o = out.mutable_data_ptr<out_t>();
  const int64_t M = g.num_outputs, K = g.reduce_len;
  const int64_t chunks = (K + kChunk - 1) / kChunk;
  const bool columns = choose_strategy(g) == Strategy::kColumns;
  const int64_t inner = columns ? g.kept.sizes[g.kept.ndim - 1] : 1;
  const int64_t tiles_per_outer = (inner + kTile - 1) / kTile;
  // A task is a tile of outputs (one output unless columns) times one chunk of K.
  const int64_t tiles = columns ? (M / inner) * tiles_per_outer : M;
  auto store = [&](int64_t i, acc_t v) {
    o[g.kept.out_offset(i)] = static_cast<out_t>(Op::finalize(v, K));
  };
  // With one chunk per output (K <= kChunk) results are stored as they are made; otherwise the
  // chunk partials ([output][chunk]) meet in a fixed tree in a second pass.
  std::vector<acc_t> partial(chunks > 1 ? static_cast<size_t>(M * chunks) : 0);
  auto emit = [&](int64_t i, int64_t c, acc_t v) {
    if (chunks == 1)
      store(i, v);
    else
      partial[i * chunks + c] = v;
  };

  const int64_t work_per_task = std::min(K, kChunk) * (columns ? kTile : 1);
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(work_per_task, 1));
  at::parallel_for(0, tiles * chunks, grain, [&](int64_t begin, int64_t end) {
    acc_t res[kTile];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t tile = t / chunks, c = t % chunks;
      const int64_t r0 = c * kChunk, r1 = std::min(K, r0 + kChunk);
      if (!columns) {
        emit(tile, c, reduce_chunk<Op>(in, g.kept.in_offset(tile), g.red, r0, r1));
        continue;
      }
      const int64_t outer = tile / tiles_per_outer;
      const int64_t first = outer * inner + (tile % tiles_per_outer) * kTile;
      const int width = static_cast<int>(std::min<int64_t>(kTile, (outer + 1) * inner - first));
      reduce_chunk_tile<Op>(in, g.kept.in_offset(first), width, g.red, r0, r1, res);
      for (int w = 0; w < width; ++w) emit(first + w, c, res[w]);
    }
  });
  if (chunks == 1) return;
  at::parallel_for(0, M, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) store(i, tree_combine<Op>(&partial[i * chunks], chunks));
  });
}

// Ops whose output has the input's dtype (amax, amin; bitwise for integers).
template <template <class> class OpT, bool kWithFp8>
void same_dtype(const Plan& plan, at::Tensor& out) {
  visit_dtype<kWithFp8>(plan.input.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    reduce_cpu<OpT<acc_of<T>>, T, T>(plan, out);
  });
}

// sum, mean, prod: the (input, output) pairs of dispatch.h (kWidenFloat: widens_float).
// Floating results use FloatOp (the canonical order), integer results IntOp over int64 (a mean
// never has an integer result: the plan raises first).
template <template <class> class FloatOp, template <class> class IntOp, bool kWidenFloat = true>
void with_dtype(const Plan& plan, at::Tensor& out) {
  const auto run = [&](auto ti, auto to) {
    using in_t = typename decltype(ti)::type;
    using out_t = typename decltype(to)::type;
    if constexpr (std::is_integral_v<out_t>)
      reduce_cpu<IntOp<int64_t>, in_t, out_t>(plan, out);
    else
      reduce_cpu<FloatOp<acc_of<out_t>>, in_t, out_t>(plan, out);
  };
  visit_sum_pair<true, kWidenFloat>(plan.input.scalar_type(), plan.out_dtype, run);
}

template <template <class> class OpT>
void index_of(const Plan& plan, at::Tensor& out) {
  visit_dtype(plan.input.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    reduce_cpu<OpT<acc_of<T>>, T, int64_t>(plan, out);
  });
}

template <template <class> class OpT>
void bitwise(const Plan& plan, at::Tensor& out) {
  visit_dtype(plan.input.scalar_type(), [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (std::is_integral_v<T>) reduce_cpu<OpT<int64_t>, T, T>(plan, out);
  });
}

}  // namespace cpu_reduce
}  // namespace treduce
