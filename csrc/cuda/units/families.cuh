// families.cuh: the op families' kernels for one input dtype (call.cuh), which the kernel units
// instantiate. Torch-free but for c10's dtypes and checks: the units build without ATen.
//
// Order, every call: size the launch for call.sms, take scratch from call.scratch when the
// launch splits, launch on call.stream. The caller checks the launch (cudaGetLastError).
#pragma once
#include <c10/util/Exception.h>

#include <cstdint>
#include <type_traits>

#include "../../dispatch.h"
#include "../../reduce_ops.h"
#include "../call.cuh"
#include "../kernels/plan_plain.cuh"
#include "../kernels/run_canon.cuh"

namespace treduce {

// Storage type the kernels see for each c10 element type (same bits).
template <class T>
struct cuda_type {
  using type = T;
};
template <>
struct cuda_type<c10::Half> {
  using type = __half;
};
template <>
struct cuda_type<c10::BFloat16> {
  using type = __nv_bfloat16;
};
template <>
struct cuda_type<c10::Float8_e4m3fn> {
  using type = __nv_fp8_e4m3;
};
template <>
struct cuda_type<c10::Float8_e5m2> {
  using type = __nv_fp8_e5m2;
};

// `slots` accumulators of scratch and the stream's counters for `tiles` split tiles; nothing when
// slots == 0.
template <class acc_t>
Scratch split_scratch(const CudaCall& call, int64_t slots, int64_t tiles) {
  // The planners split only tiles they can count (plan_launch, plan_canon): this holds on
  // every GPU, whatever its SM count.
  TORCH_CHECK(tiles <= kCounterCapacity, "treduce: ", tiles, " split tiles planned, more than the ",
              kCounterCapacity, " counters a launch can have");
  if (slots == 0) return Scratch{};
  return call.scratch->take(slots * static_cast<int64_t>(sizeof(acc_t)));
}

// The plain kernels (plan_plain.cuh).
template <class Op, class in_at, class out_at>
void run_cuda(const CudaCall& call) {
  using in_t = typename cuda_type<in_at>::type;
  using out_t = typename cuda_type<out_at>::type;
  using acc_t = typename Op::acc_t;
  const in_t* in = static_cast<const in_t*>(call.in);
  const Geometry g = launch_geometry(call.geom, sizeof(in_t));
  const Launch lc = plan_launch<Op, in_t, out_t>(g, in, call.sms, call.mode.vec_cols);
  const Scratch s = split_scratch<acc_t>(call, lc.partials, lc.counters);
  run_launch<Op, in_t, out_t>(lc, g, in, static_cast<out_t*>(call.out),
                              static_cast<acc_t*>(s.partials), s.counters, call.stream);
}

// Floating sums, means and products in the canonical order (canon_config.cuh): the same steps.
template <class Op, class in_at, class out_at>
void run_canon(const CudaCall& call) {
  using in_t = typename cuda_type<in_at>::type;
  using out_t = typename cuda_type<out_at>::type;
  using acc_t = typename Op::acc_t;
  const in_t* in = static_cast<const in_t*>(call.in);
  const Geometry g = launch_geometry(call.geom, sizeof(in_t));
  const CanonLaunch lc =
      plan_canon<Op, in_t, out_t>(g, in, call.sms, call.mode.force, call.clusters);
  TORCH_CHECK(lc.ok, "treduce.", op_name(call.kind), ": ", call.geom.reduce_len,
              " reduced elements per output is more than the canonical kernels support");
  const Scratch s = split_scratch<acc_t>(call, lc.partials, lc.counters);
  run_canon_launch<Op, in_t, out_t>(lc, g, in, static_cast<out_t*>(call.out),
                                    static_cast<acc_t*>(s.partials), s.counters, call.stream);
}

// sum: one instantiation per (input, output) pair of dispatch.h, float8 inputs included.
// Floating results follow the canonical order; integer results are exact in any order (int64
// with wrap-around) and use the plain kernels, as do floating results when
// treduce._force_launch("plain") asks for the plain float32-accumulator baseline.
template <class In>
void sum_kernels(const CudaCall& call) {
  visit_sum_out<In>(call.out_dtype, [&](auto to) {
    using out_t = typename decltype(to)::type;
    using acc_t = acc_of<out_t>;
    if constexpr (std::is_integral_v<out_t>) {
      run_cuda<SumOp<acc_t>, In, out_t>(call);
    } else {
      if (call.mode.plain)
        run_cuda<SumOp<acc_t>, In, out_t>(call);
      else
        run_canon<CanonSumOp<acc_t>, In, out_t>(call);
    }
  });
}

// mean: the sum's floating pairs, scaled once at the end.
template <class In>
void mean_kernels(const CudaCall& call) {
  static_assert(!std::is_integral_v<In>, "integer means are converted first (plan.cpp)");
  visit_sum_out<In>(call.out_dtype, [&](auto to) {
    using out_t = typename decltype(to)::type;
    if (call.mode.plain)
      run_cuda<ScaledMeanOp<acc_of<out_t>>, In, out_t>(call);
    else
      run_canon<CanonMeanOp<acc_of<out_t>>, In, out_t>(call);
  });
}

// prod: the sum's pairs without float8 (torch has no fp8 prod) and without the floating
// widenings (a floating dtype= is a conversion first; dispatch.h). Floating results follow the
// canonical order with the scaled accumulator (CanonProdOp): the CPU's bits, and no overflow
// before the result's own. Integer results are exact in any order (int64 with wrap-around) and
// use the plain kernels.
template <class In>
void prod_kernels(const CudaCall& call) {
  constexpr bool kWiden = widens_float(OpKind::kProd);
  visit_sum_out<In, kWiden>(call.out_dtype, [&](auto to) {
    using out_t = typename decltype(to)::type;
    using acc_t = acc_of<out_t>;
    if constexpr (std::is_integral_v<out_t>)
      run_cuda<ProdOp<acc_t>, In, out_t>(call);
    else
      run_canon<CanonProdOp<acc_t>, In, out_t>(call);
  });
}

// amax, amin: the input's dtype, float8 included.
template <class In>
void extreme_kernels(const CudaCall& call) {
  if (call.kind == OpKind::kAmax)
    run_cuda<MaxOp<acc_of<In>>, In, In>(call);
  else
    run_cuda<MinOp<acc_of<In>>, In, In>(call);
}

// argmax, argmin: int64 indices.
template <class In>
void arg_kernels(const CudaCall& call) {
  static_assert(!std::is_same_v<In, bool>, "torch has no argmax of bool");
  if (call.kind == OpKind::kArgmax)
    run_cuda<ArgMaxOp<acc_of<In>>, In, int64_t>(call);
  else
    run_cuda<ArgMinOp<acc_of<In>>, In, int64_t>(call);
}

// bitwise_and/or/xor: the bits of the input, as the unsigned type of its size (one kernel per
// size, not per dtype).
template <int kBytes>
struct unsigned_of;
template <>
struct unsigned_of<1> {
  using type = uint8_t;
};
template <>
struct unsigned_of<2> {
  using type = uint16_t;
};
template <>
struct unsigned_of<4> {
  using type = uint32_t;
};
template <>
struct unsigned_of<8> {
  using type = uint64_t;
};

template <class In>
void bitwise_kernels(const CudaCall& call) {
  static_assert(std::is_integral_v<In>, "bitwise ops take integer and bool inputs");
  using U = typename unsigned_of<sizeof(In)>::type;
  using acc_t = std::conditional_t<sizeof(U) == 8, uint64_t, uint32_t>;
  switch (call.kind) {
    case OpKind::kAnd:
      return run_cuda<BitAndOp<acc_t>, U, U>(call);
    case OpKind::kOr:
      return run_cuda<BitOrOp<acc_t>, U, U>(call);
    default:
      return run_cuda<BitXorOp<acc_t>, U, U>(call);
  }
}

// A unit whose canonical kernels made it the build's longest leaves parts of them to units of
// their own, so that they compile side by side. The op's unit declares each part with
// `TREDUCE_..._PART(extern template, ...)`, which keeps it from instantiating the part's kernels,
// and another unit instantiates the part with `TREDUCE_..._PART(template, ...)` (units/prod_half.cu
// and prod_half_{small,tiles,lat}.cu). A part names every host function that takes one of its
// kernels' addresses: the launcher and the planner's occupancy and cluster queries.
//   the small-output kernels: run_small (canon_small_kernel and its chunk loop);
#define TREDUCE_SMALL_PART(kw, Op, in_t, out_t)                                                \
  kw void run_small<Op, in_t, out_t>(const CanonLaunch&, const Geometry&, const in_t*, out_t*, \
                                     typename Op::acc_t*, unsigned*, cudaStream_t)
//   the tile kernels but the latency ones: run_tiles, canon_blocks_per_sm;
#define TREDUCE_TILES_PART(kw, Op, in_t, out_t)                                                \
  kw void run_tiles<Op, in_t, out_t>(const CanonLaunch&, const Geometry&, const in_t*, out_t*, \
                                     typename Op::acc_t*, unsigned*, cudaStream_t);            \
  kw int canon_blocks_per_sm<Op, in_t, out_t>(int, int)
//   the latency kernels: run_lat_tiles, canon_max_cluster.
#define TREDUCE_LAT_TILES_PART(kw, Op, in_t, out_t)                                                \
  kw void run_lat_tiles<Op, in_t, out_t>(const CanonLaunch&, const Geometry&, const in_t*, out_t*, \
                                         typename Op::acc_t*, unsigned*, cudaStream_t);            \
  kw int canon_max_cluster<Op, in_t, out_t, false>();                                              \
  kw int canon_max_cluster<Op, in_t, out_t, true>()

}  // namespace treduce
