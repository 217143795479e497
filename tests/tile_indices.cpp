// canon_tile_kernel's staging indices on the host (tests/test_tile_indices.py): the kernel's
// threads, each walking tile_map's map from its index by steps of the block's thread count
// (geometry.h's TileWalkerOf, as the kernel does), must visit every logical position of the reduced
// block once and read the input's element of that position there, in memory order (the kernel's
// loads coalesced).
#include <cstdint>
#include <vector>

#include "../csrc/geometry.h"

using namespace treduce;

// The errors of the walk of `map` by `threads` threads with TileWalkerOf<kD>, over the block `r`
// of K elements (tile_staging_errors).
template <int kD>
int64_t walk_errors(const IndexMap& r, const TileMap& map, int64_t K, int threads,
                    bool expanded) {
  std::vector<int> seen(K, 0);
  std::vector<int64_t> from(K, -1), by_step(K, -1);
  int64_t errors = 0;
  for (int tid = 0; tid < threads; ++tid) {
    TileWalkerOf<kD> w(map, tid);
    for (int64_t i = tid; i < K; i += threads) {
      const int64_t k = w.position(map);
      if (k < 0 || k >= K) {
        ++errors;
      } else {
        ++seen[k];
        from[k] = w.offset(map);
        by_step[i] = from[k];
      }
      w.advance(map);
    }
  }
  for (int64_t k = 0; k < K; ++k)
    if (seen[k] != 1 || from[k] != r.in_offset(k)) ++errors;
  for (int64_t i = 1; i < K; ++i)
    if (!expanded && by_step[i] <= by_step[i - 1]) ++errors;
  return errors;
}

// The number of logical positions of the reduced block (`nd` dims of `sizes` and input
// `strides`, logical order, elements that do not overlap) that `threads` threads stage wrongly:
// missed, staged twice, or from another element than red.in_offset(position); and the steps of
// the walk (element i to i + 1) that go back in memory, where no stride is 0. Walked over four
// dims and, where the map has at most two longer than 1 (tile_map_two_dims), over two as well,
// as the kernel does. -1 where the block does not fit a TileMap (tile_map_fits).
extern "C" int64_t tile_staging_errors(int nd, const int64_t* sizes, const int64_t* strides,
                                       int threads) {
  IndexMap r;
  r.ndim = nd;
  int64_t K = 1;
  bool expanded = false;
  for (int d = 0; d < nd; ++d) {
    r.sizes[d] = sizes[d];
    r.in_strides[d] = strides[d];
    K *= sizes[d];
    expanded = expanded || strides[d] == 0;
  }
  if (!tile_map_fits(r)) return -1;
  const TileMap map = tile_map(r, threads);
  int64_t errors = walk_errors<kTileDims>(r, map, K, threads, expanded);
  if (tile_map_two_dims(map)) errors += walk_errors<2>(r, map, K, threads, expanded);
  return errors;
}

// tile_map_fits for `nd` dims of `sizes` and `strides`: 1 or 0.
extern "C" int tile_fits(int nd, const int64_t* sizes, const int64_t* strides) {
  IndexMap r;
  r.ndim = nd;
  for (int d = 0; d < nd; ++d) {
    r.sizes[d] = sizes[d];
    r.in_strides[d] = strides[d];
  }
  return tile_map_fits(r) ? 1 : 0;
}

// The errors of the vector walk of `vmap` (tile_vector_map) by `threads` threads with
// TileWalkerOf<kD>, as stage_tile_runs walks it: every logical position of the block staged once,
// from input offset r.in_offset(position), each vector from an offset that is a whole number of
// vectors and element e of it at the vector's position plus e * spread.
template <int kD>
int64_t run_walk_errors(const IndexMap& r, const TileMap& vmap, int64_t K, int V, int spread,
                        int threads) {
  std::vector<int> seen(K, 0);
  std::vector<int64_t> from(K, -1);
  int64_t errors = 0;
  const int64_t nvec = K / V;
  for (int tid = 0; tid < threads; ++tid) {
    TileWalkerOf<kD> w(vmap, tid);
    for (int64_t i = tid; i < nvec; i += threads) {
      const int64_t off = w.offset(vmap);
      const int64_t k0 = w.position(vmap);
      if (off % V != 0) ++errors;
      for (int e = 0; e < V; ++e) {
        const int64_t k = k0 + int64_t(e) * spread;
        if (k < 0 || k >= K) {
          ++errors;
          continue;
        }
        ++seen[k];
        from[k] = off + e;
      }
      w.advance(vmap);
    }
  }
  for (int64_t k = 0; k < K; ++k)
    if (seen[k] != 1 || from[k] != r.in_offset(k)) ++errors;
  return errors;
}

// stage_tile_runs' walk of the block of `nd` dims of `sizes` and `strides` in vectors of V
// elements by `threads` threads: its errors (run_walk_errors, over four dims and, where the map
// has at most two longer than 1, over two), or -1 where the block does not fit a TileMap and -2
// where it does not lie in runs of whole vectors (tile_map_runs: the kernel stages it element by
// element).
extern "C" int64_t tile_run_errors(int nd, const int64_t* sizes, const int64_t* strides,
                                   int threads, int V) {
  IndexMap r;
  r.ndim = nd;
  int64_t K = 1;
  for (int d = 0; d < nd; ++d) {
    r.sizes[d] = sizes[d];
    r.in_strides[d] = strides[d];
    K *= sizes[d];
  }
  if (!tile_map_fits(r)) return -1;
  const TileMap elems = tile_map(r, threads);
  if (!tile_map_runs(elems, V)) return -2;
  const TileMap vmap = tile_vector_map(elems, V, threads);
  const int spread = elems.out_strides[kTileDims - 1];
  int64_t errors = run_walk_errors<kTileDims>(r, vmap, K, V, spread, threads);
  if (tile_map_two_dims(vmap)) errors += run_walk_errors<2>(r, vmap, K, V, spread, threads);
  return errors;
}
