// run_canon.cuh: launches the kernel that plan_canon chose (run_canon_launch). Raw CUDA, nothing
// from torch.
//
#pragma once
#include "plan_canon.cuh"

namespace treduce {

// The latency kernel kKernel (canon_kernel<..., kLat = true>) for the plan: the splits of a tile
// in one cluster.
template <auto kKernel, class in_t, class out_t, class acc_t>
void launch_latency(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
                    acc_t* partials, unsigned* counters, cudaStream_t stream) {
  if (lc.cfg.splits > 1)
    launch_cluster<kKernel>(lc.grid, lc.block, dim3(1, static_cast<unsigned>(lc.cfg.splits), 1), 0,
                            stream, in, out, g, lc.cfg, partials, counters);
  else
    kKernel<<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
}

// canon_small_kernel at kL leaves per thread, one block per output (lc.chunk = 0) or chunks
// merged through partials. One block per output at two leaves per thread takes the kWhole
// instantiation, without the chunks' merge, except float16 (folded in any order) (µs eager against
// the chunk kernel: bfloat16 rows (16384, 32768) 257.2 against 290.3, float8 rows 240.8 against
// 244.5, float16 250.4 against 248.5; at one leaf per thread float32 rows (16384, 16384) 266.3
// against 242.5); lc.whole forces it off or on.
template <class Op, class in_t, class out_t, int kL, bool kUnaligned>
void launch_small(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
                  typename Op::acc_t* partials, unsigned* counters, size_t stage,
                  cudaStream_t stream) {
  constexpr bool kWholeAuto = kL == 2 && !sums_exactly_any_order<Op, in_t>();
  if (lc.chunk == 0 && (lc.whole < 0 ? kWholeAuto : lc.whole == 1))
    canon_small_kernel<Op, in_t, out_t, kL, kUnaligned, false, true>
        <<<lc.grid, lc.block, stage, stream>>>(in, out, g, partials, counters, 0, 0);
  else
    canon_small_kernel<Op, in_t, out_t, kL, kUnaligned><<<lc.grid, lc.block, stage, stream>>>(
        in, out, g, partials, counters, lc.chunk, lc.cfg.merge_per_thread);
}

// The small-output kernels (lc.small: canon_small_kernel and its chunk loop), with their dynamic
// shared memory: the stage, kSmallVecs vectors per warp.
template <class Op, class in_t, class out_t>
void run_small(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
               typename Op::acc_t* partials, unsigned* counters, cudaStream_t stream) {
  using Slot = Vec<in_t, vec_width<in_t>()>;
  const size_t stage = size_t(lc.block.x / 32) * LeafStage<in_t>::kSmallVecs * sizeof(Slot);
  const int merge = lc.cfg.merge_per_thread;
  constexpr int kL = canon_per<in_t>();  // leaves per thread of chunks and long small outputs
  // Two leaves per thread where the plan gave them (chunk_per for chunks, small_block's
  // small_leaves_per_thread for one block per output); several chunks per block where
  // chunk_loop gave them (chunks of one leaf per thread only).
  const bool two =
      lc.chunk > 0 ? lc.cfg.per == 2 : small_leaves_per_thread<in_t>(g.reduce_len) == 2;
  const bool looped = lc.chunk > 0 && int64_t(lc.grid.x) < lc.cfg.splits;
  if constexpr (small_unaligned<Op, in_t, kL>()) {
    // chunk_rows or small_block from a base off a boundary: every run one shift. 16-bit
    // inputs as aligned ones, 8-bit ones two leaves per thread, float32 one.
    if (reinterpret_cast<uintptr_t>(in) % 16 != 0) {
      if constexpr (small_unaligned<Op, in_t, 1>() && kL == 2) {
        if (looped) {
          canon_small_loop_kernel<Op, in_t, out_t, true><<<lc.grid, lc.block, stage, stream>>>(
              in, out, g, partials, counters, lc.chunk, lc.cfg.splits, merge);
          return;
        }
        if (!two) {
          launch_small<Op, in_t, out_t, 1, true>(lc, g, in, out, partials, counters, stage, stream);
          return;
        }
      }
      launch_small<Op, in_t, out_t, kL, true>(lc, g, in, out, partials, counters, stage, stream);
      return;
    }
  }
  if constexpr (chunks_loop<in_t>()) {
    if (lc.cluster) {  // chunk_cluster: an output's chunks merged in a cluster
      launch_cluster<canon_small_kernel<Op, in_t, out_t, 1, false, true>>(
          lc.grid, lc.block, dim3(lc.grid.x, 1, 1), stage, stream, in, out, g, partials, counters,
          lc.chunk, merge);
      return;
    }
    if (looped) {
      canon_small_loop_kernel<Op, in_t, out_t><<<lc.grid, lc.block, stage, stream>>>(
          in, out, g, partials, counters, lc.chunk, lc.cfg.splits, merge);
      return;
    }
  }
  if constexpr (kL == 2) {
    if (two) {
      launch_small<Op, in_t, out_t, 2, false>(lc, g, in, out, partials, counters, stage, stream);
      return;
    }
  }
  launch_small<Op, in_t, out_t, 1, false>(lc, g, in, out, partials, counters, stage, stream);
}

// The latency instantiations of canon_kernel (lc.lat), with interleaved leaves or without.
template <class Op, class in_t, class out_t>
void run_lat_tiles(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
                   typename Op::acc_t* partials, unsigned* counters, cudaStream_t stream) {
  if constexpr (interleaves<in_t>()) {
    if (lc.inter) {
      launch_latency<canon_kernel<Op, in_t, out_t, 1, 1, true, false, true>>(
          lc, g, in, out, partials, counters, stream);
      return;
    }
  }
  launch_latency<canon_kernel<Op, in_t, out_t, 1, 1, true>>(lc, g, in, out, partials, counters,
                                                            stream);
}

// The other instantiations of canon_kernel that the plan's fields name: interleaved leaves,
// staged or plain columns, one or two leaves per thread.
template <class Op, class in_t, class out_t>
void run_tiles(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
               typename Op::acc_t* partials, unsigned* counters, cudaStream_t stream) {
  if constexpr (interleaves<in_t>()) {
    if (lc.inter) {
      canon_kernel<Op, in_t, out_t, 1, 1, false, false, true>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
      return;
    }
  }
  constexpr int V = canon_vec<in_t>();
  if constexpr (V != 2 && sizeof(in_t) == 4 && canon_stage_fits<Op>(2)) {
    if (lc.vec == 2) {  // float32 pairs (always staged where the layout allows)
      canon_kernel<Op, in_t, out_t, 2, 1, false, true>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
      return;
    }
  }
  if constexpr (canon_stage_fits<Op>(V)) {
    if (lc.vec > 1 && lc.stage) {
      canon_kernel<Op, in_t, out_t, V, 1, false, true>
          <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
      return;
    }
  }
  if (lc.vec > 1)
    canon_kernel<Op, in_t, out_t, V>
        <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
  else if (lc.cfg.per > 1)
    canon_kernel<Op, in_t, out_t, 1, canon_per<in_t>()>
        <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
  else
    canon_kernel<Op, in_t, out_t, 1>
        <<<lc.grid, lc.block, 0, stream>>>(in, out, g, lc.cfg, partials, counters);
}

template <class Op, class in_t, class out_t>
void run_canon_launch(const CanonLaunch& lc, const Geometry& g, const in_t* in, out_t* out,
                      typename Op::acc_t* partials, unsigned* counters, cudaStream_t stream) {
  if (lc.packed) {
    run_packed<Op, vec_width<in_t>()>(g, in, out, lc.packed_vecs, lc.grid, lc.block, stream);
    return;
  }
  if (lc.pair == 2) {
    pair_rows_kernel<Op, in_t, out_t, 2><<<lc.grid, lc.block, 0, stream>>>(in, out, g);
    return;
  }
  if (lc.pair == 4) {
    pair_rows_kernel<Op, in_t, out_t, 4><<<lc.grid, lc.block, 0, stream>>>(in, out, g);
    return;
  }
  if (lc.tile)
    run_tile<Op>(lc, g, in, out, stream);
  else if (lc.small)
    run_small<Op>(lc, g, in, out, partials, counters, stream);
  else if (lc.lat)
    run_lat_tiles<Op>(lc, g, in, out, partials, counters, stream);
  else
    run_tiles<Op>(lc, g, in, out, partials, counters, stream);
}

}  // namespace treduce
