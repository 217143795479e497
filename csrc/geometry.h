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
