// geometry.h: the canonical shape of a reduction, as the kernels see it. Nothing from torch.
//
// Every reduction is described as M outputs times K reduced elements:
//
//   input offset of (output o, reduced element r) = kept.in_offset(o) + red.in_offset(r)
//   output offset of o                            = kept.out_offset(o)
//
// `kept` and `red` map a linear index (row-major over their dims) to element offsets. The plan
// (plan.cpp) drops size-1 dims, orders each side by input stride (memory order, outermost first)
// and merges dims that are contiguous in memory, so that the common layouts become one or two dims
// per side. The strategy is chosen from this geometry alone.
#pragma once
#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#define TR_HD __host__ __device__ __forceinline__
#define TR_UNROLL _Pragma("unroll")
#else
#define TR_HD inline
#define TR_UNROLL
#endif

namespace treduce {

// Dims per side after merging. A tensor that needs more (over 8 non-mergeable kept or reduced dims)
// is first permuted into (kept..., reduced...) order and copied; see plan.cpp.
constexpr int kMaxDims = 8;

// Maps a linear index over `ndim` dims (row-major, dim 0 outermost) to an input and an output
// element offset. Sizes and strides are int64_t; offsets never overflow 64 bits.
struct IndexMap {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t in_strides[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};

  TR_HD int64_t in_offset(int64_t i) const {
    if (ndim == 1) return i * in_strides[0];  // the common case: no division
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / sizes[d];
      off += (i - q * sizes[d]) * in_strides[d];
      i = q;
    }
    return off;
  }
  TR_HD int64_t out_offset(int64_t i) const {
    if (ndim == 1) return i * out_strides[0];
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / sizes[d];
      off += (i - q * sizes[d]) * out_strides[d];
      i = q;
    }
    return off;
  }
};

// A fixed step through an IndexMap, split into mixed-radix digits once (on the host), so that a
// Walker advances by it with adds and compares instead of divisions. The outermost digit is not
// reduced modulo its size: a walk may step past the end, and the caller stops there.
struct StepDigits {
  int64_t d[kMaxDims] = {};
};

TR_HD StepDigits step_digits(const IndexMap& m, int64_t step) {
  StepDigits s;
  for (int d = m.ndim - 1; d > 0; --d) {
    s.d[d] = step % m.sizes[d];
    step /= m.sizes[d];
  }
  if (m.ndim > 0) s.d[0] = step;
  return s;
}

// A position in an IndexMap, kept as per-dim indices. The loops run over the compile-time bound
// kMaxDims with a guard, so that on the GPU the indices stay in registers.
struct Walker {
  int64_t idx[kMaxDims];

  TR_HD Walker(const IndexMap& m, int64_t i) {
    TR_UNROLL
    for (int d = kMaxDims - 1; d >= 0; --d) {
      idx[d] = 0;
      if (d < m.ndim) {
        const int64_t q = d > 0 ? i / m.sizes[d] : 0;
        idx[d] = i - q * m.sizes[d];
        i = q;
      }
    }
  }
  TR_HD int64_t offset(const IndexMap& m) const {
    int64_t off = 0;
    TR_UNROLL
    for (int d = 0; d < kMaxDims; ++d)
      if (d < m.ndim) off += idx[d] * m.in_strides[d];
    return off;
  }
  TR_HD void advance(const IndexMap& m, const StepDigits& s) {
    int64_t carry = 0;
    TR_UNROLL
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < m.ndim) {
        int64_t v = idx[d] + s.d[d] + carry;
        carry = 0;
        if (d > 0 && v >= m.sizes[d]) {  // digits are below the size: one carry at most
          v -= m.sizes[d];
          carry = 1;
        }
        idx[d] = v;
      }
    }
  }
};

// A walk r, r + step, r + 2 step, ... through a map of exactly two dims (runs of the inner dim,
// e.g. rows_kernel's runs of vectors: (N, H*W) of NCHW statistics, the 128 x 128 blocks of fp8
// scaling), kept as the inner index and the offset: per step two adds, a compare and a
// correction where the inner index wraps, where Walker sums every digit's product again.
// Walker's rule: the outer index is not reduced, so a walk may step past the end.
struct TwoDimWalker {
  int64_t inner, off;   // the inner index and the offset of the current position
  int64_t size;         // the inner dim's size
  int64_t step_inner;   // the step's inner digit (below `size`)
  int64_t delta, wrap;  // the offset's change per step, and its correction on a wrap

  TR_HD TwoDimWalker(const IndexMap& m, int64_t r, const StepDigits& s) {
    size = m.sizes[1];
    const int64_t q = r / size;
    inner = r - q * size;
    off = q * m.in_strides[0] + inner * m.in_strides[1];
    step_inner = s.d[1];
    delta = s.d[0] * m.in_strides[0] + s.d[1] * m.in_strides[1];
    wrap = m.in_strides[0] - size * m.in_strides[1];
  }
  // The current offset; then one step on.
  TR_HD int64_t next() {
    const int64_t o = off;
    off += delta;
    inner += step_inner;
    if (inner >= size) {  // the inner digit is below the size: one wrap at most
      inner -= size;
      off += wrap;
    }
    return o;
  }
};

// A run of K elements kStep apart in memory (1: contiguous, 2: every other element) read as
// aligned vectors of V elements (rows_kernel's rows): `head` memory elements before the first
// vector boundary (at most the run's span), then `nvec` whole vectors inside the span, then the
// tail. Element r lies at memory position r * kStep. Vector v starts at memory position
// head + v * V; its elements of the run are at positions p, p + kStep, ... in it (p: the parity of
// head), indices first_r(v), first_r(v) + 1, ...; the head holds indices below head_end(), the
// tail those from tail_begin(). Every index once (tests/test_walkers.py).
template <int kStep, int V>
struct RunVectors {
  static_assert((kStep == 1 || kStep == 2) && V % kStep == 0, "runs at stride 1 or 2");
  int64_t head, nvec;
  int p;
  // `to_boundary`: how many elements lie from the run's first to the next vector boundary
  // (0 .. V - 1).
  TR_HD RunVectors(int64_t to_boundary, int64_t K) {
    const int64_t span = (K - 1) * kStep + 1;
    head = to_boundary > span ? span : to_boundary;
    nvec = (span - head) / V;
    p = static_cast<int>(head % kStep);
  }
  TR_HD int64_t first_r(int64_t v) const { return (head + v * V + p) / kStep; }
  TR_HD int64_t head_end() const { return (head + kStep - 1) / kStep; }
  TR_HD int64_t tail_begin() const { return (head + nvec * V + kStep - 1) / kStep; }
};

// A map's dims in memory order (strides decreasing, the logical order among equal ones):
// in_strides the input's, out_strides each dim's stride in the logical linear index of `r`.
// Walking it from 0 reads the elements in memory order and names their logical positions
// (canon_tile_kernel's staging). Host code.
inline IndexMap tile_memory_order(const IndexMap& r) {
  int order[kMaxDims];
  for (int d = 0; d < r.ndim; ++d) order[d] = d;
  std::stable_sort(order, order + r.ndim,
                   [&](int a, int b) { return r.in_strides[a] > r.in_strides[b]; });
  int64_t logical[kMaxDims];
  int64_t step = 1;
  for (int d = r.ndim - 1; d >= 0; --d) {
    logical[d] = step;
    step *= r.sizes[d];
  }
  IndexMap m;
  m.ndim = r.ndim;
  for (int i = 0; i < r.ndim; ++i) {
    m.sizes[i] = r.sizes[order[i]];
    m.in_strides[i] = r.in_strides[order[i]];
    m.out_strides[i] = logical[order[i]];
  }
  return m;
}

// canon_tile_kernel's staging walk: a reduced block's dims in memory order (tile_memory_order),
// the dims of size 1 dropped and the rest right-aligned in kTileDims dims (the leading ones of
// size 1), with 32-bit offsets and positions (tile_map_fits). Its Walker (TileWalkerOf) advances
// by `step` with adds and compares over four dims, or two where the block has two: a fifth of
// Walker's instructions an element or less, which bound the kernel.
constexpr int kTileDims = 4;
struct TileMap {
  int32_t sizes[kTileDims];
  int32_t in_strides[kTileDims];
  int32_t out_strides[kTileDims];  // each dim's stride in the block's logical linear index
  int32_t step[kTileDims];         // the walk's step as mixed-radix digits (step_digits' rule)
};

// Whether tile_map can hold `r`: at most kTileDims dims longer than 1, and every input offset and
// logical position of the block under 2^31. Host code.
inline bool tile_map_fits(const IndexMap& r) {
  int n = 0;
  int64_t extent = 0, count = 1;
  for (int d = 0; d < r.ndim; ++d) {
    if (r.sizes[d] <= 1) continue;
    ++n;
    extent += (r.sizes[d] - 1) * r.in_strides[d];
    count *= r.sizes[d];
    if (extent >= INT32_MAX || count >= INT32_MAX) return false;
  }
  return n <= kTileDims;
}

// A TileMap's walk step, `step` as mixed-radix digits over its sizes (step_digits' rule).
inline void tile_map_step(TileMap& t, int32_t step) {
  for (int d = kTileDims - 1; d > 0; --d) {
    t.step[d] = step % t.sizes[d];
    step /= t.sizes[d];
  }
  t.step[0] = step;
}

// r's dims in memory order as a TileMap walked `step` elements at a time (tile_map_fits(r)).
// Host code.
inline TileMap tile_map(const IndexMap& r, int32_t step) {
  const IndexMap m = tile_memory_order(r);
  TileMap t;
  for (int d = 0; d < kTileDims; ++d) {
    t.sizes[d] = 1;
    t.in_strides[d] = t.out_strides[d] = 0;
  }
  for (int d = m.ndim - 1, j = kTileDims - 1; d >= 0; --d) {
    if (m.sizes[d] <= 1) continue;
    t.sizes[j] = static_cast<int32_t>(m.sizes[d]);
    t.in_strides[j] = static_cast<int32_t>(m.in_strides[d]);
    t.out_strides[j] = static_cast<int32_t>(m.out_strides[d]);
    --j;
  }
  tile_map_step(t, step);
  return t;
}

// Whether a TileMap's elements lie in runs of whole V-element vectors, each run starting a whole
// number of vectors from the block's base: its innermost memory dim (the last) of stride 1 and a
// size that V divides, and every other stride a multiple of V (the H x W maps stored
// transposed: runs of H; channels-last images over (C, H, W): runs of C). Host code.
inline bool tile_map_runs(const TileMap& m, int V) {
  constexpr int last = kTileDims - 1;
  if (m.in_strides[last] != 1 || m.sizes[last] % V != 0) return false;
  for (int d = 0; d < last; ++d)
    if (m.sizes[d] > 1 && m.in_strides[d] % V != 0) return false;
  return true;
}

// The map of those vectors (tile_map_runs): the innermost dim counted in vectors, walked `step`
// vectors at a time. The vector at logical position k holds the elements at k, k + s, ...,
// k + (V - 1) s, where s is m's innermost out-stride. Host code.
inline TileMap tile_vector_map(TileMap m, int V, int32_t step) {
  constexpr int last = kTileDims - 1;
  m.sizes[last] /= V;
  m.in_strides[last] = V;
  m.out_strides[last] *= V;
  tile_map_step(m, step);
  return m;
}

// A position in a TileMap, as indices over its last kD dims (the map's leading kTileDims - kD
// dims of size 1: fewer dims, fewer instructions an element), Walker's rule: the outermost digit
// is not reduced modulo its size, so a walk may step past the end, and the caller stops there.
template <int kD>
struct TileWalkerOf {
  static constexpr int kFirst = kTileDims - kD;
  int32_t idx[kD];

  TR_HD TileWalkerOf(const TileMap& m, int32_t i) {
    TR_UNROLL
    for (int j = kD - 1; j > 0; --j) {
      idx[j] = i % m.sizes[kFirst + j];
      i /= m.sizes[kFirst + j];
    }
    idx[0] = i;
  }
  TR_HD int32_t offset(const TileMap& m) const {
    int32_t off = 0;
    TR_UNROLL
    for (int j = 0; j < kD; ++j) off += idx[j] * m.in_strides[kFirst + j];
    return off;
  }
  TR_HD int32_t position(const TileMap& m) const {
    int32_t at = 0;
    TR_UNROLL
    for (int j = 0; j < kD; ++j) at += idx[j] * m.out_strides[kFirst + j];
    return at;
  }
  TR_HD void advance(const TileMap& m) {
    int32_t carry = 0;
    TR_UNROLL
    for (int j = kD - 1; j >= 0; --j) {
      int32_t v = idx[j] + m.step[kFirst + j] + carry;
      carry = 0;
      if (j > 0 && v >= m.sizes[kFirst + j]) {  // digits are below the size: one carry at most
        v -= m.sizes[kFirst + j];
        carry = 1;
      }
      idx[j] = v;
    }
  }
};

// Whether a TileMap's dims longer than 1 are at most its last two (TileWalkerOf<2> walks it).
TR_HD bool tile_map_two_dims(const TileMap& m) {
  TR_UNROLL
  for (int d = 0; d < kTileDims - 2; ++d)
    if (m.sizes[d] != 1) return false;
  return true;
}

// How the work is split; chosen by choose_strategy() from the geometry alone.
enum class Strategy : int {
  kRows,     // reduced elements contiguous (one dim, stride 1): full reductions and rows
  kColumns,  // the innermost kept dim is contiguous in input and output: columns, mid dims, NHWC
  kStrided,  // anything else: per-element offsets through `red`
};

struct Geometry {
  int64_t num_outputs = 1;  // M
  int64_t reduce_len = 1;   // K
  IndexMap kept;            // over M (in_strides: input, out_strides: output)
  IndexMap red;             // over K (in_strides only)
  // Not shape: set per launch by the CUDA launchers (launch_geometry), read by the kernels'
  // 16-byte loads (load_policy); the CPU backend ignores it.
  bool evict_first = false;
};

// The innermost kept dim, when it is contiguous in both input and output, can be walked by
// consecutive threads: that is the column strategy (for any inner size: narrow inner dims share
// a warp's lanes with reduced elements).
inline Strategy choose_strategy(const Geometry& g) {
  if (g.red.ndim == 1 && g.red.in_strides[0] == 1) return Strategy::kRows;
  if (g.kept.ndim >= 1) {
    const int d = g.kept.ndim - 1;
    if (g.kept.in_strides[d] == 1 && g.kept.out_strides[d] == 1) return Strategy::kColumns;
  }
  return Strategy::kStrided;
}

}  // namespace treduce
