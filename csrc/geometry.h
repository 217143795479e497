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
#else
#define TR_HD inline
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
};

// The innermost kept dim, when it is contiguous in both input and output, can be walked by
// consecutive threads: that is the column strategy.
inline Strategy choose_strategy(const Geometry& g) {
  if (g.red.ndim == 1 && g.red.in_strides[0] == 1) return Strategy::kRows;
  if (g.kept.ndim >= 1) {
    const int d = g.kept.ndim - 1;
    if (g.kept.in_strides[d] == 1 && g.kept.out_strides[d] == 1 && g.kept.sizes[d] >= 8)
      return Strategy::kColumns;
  }
  return Strategy::kStrided;
}

}  // namespace treduce
