// binding.cuh: the thin layer between a Plan (torch) and the kernel headers (raw CUDA).
//
// Order, every time: the caller holds a device guard for the input's device; here we take the
// current stream, size the launch, take scratch from PyTorch's caching allocator and the
// self-resetting counters from counter_pool(), launch, and check the launch. No host
// synchronisation and no cudaMalloc, so every op can be captured in a CUDA graph.
#pragma once
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e5m2.h>

#include "../plan.h"
#include "kernels/plan_plain.cuh"
#include "kernels/run_canon.cuh"

namespace treduce {

// Storage type the kernels see for each at:: element type (same bits).
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

// kCounterCapacity zeroed counters owned by (device, stream, graph capture). Kernels leave them at
// zero when they finish, so they are zeroed once, when first made; see reduce_cuda.cu.
unsigned* counter_pool(const at::Tensor& like, cudaStream_t stream);

// What a split launch needs besides the input and output: `slots` accumulators of scratch from
// the caching allocator (held by `buffer` until the launch is queued) and the stream's counters.
// Nothing when slots == 0.
template <class acc_t>
struct SplitScratch {
  at::Tensor buffer;
  acc_t* partials = nullptr;
  unsigned* counters = nullptr;
  SplitScratch(const Plan& plan, int64_t slots, int64_t tiles, cudaStream_t stream) {
    // The planners split only tiles they can count (plan_launch, plan_canon): this holds on
    // every GPU, whatever its SM count.
    TORCH_CHECK(tiles <= kCounterCapacity, "treduce: ", tiles,
                " split tiles planned, more than "
                "the ",
                kCounterCapacity, " counters a launch can have");
    if (slots == 0) return;
    buffer = at::empty({slots * static_cast<int64_t>(sizeof(acc_t))},
                       plan.input.options().dtype(at::kByte));
    partials = reinterpret_cast<acc_t*>(buffer.data_ptr());
    counters = counter_pool(plan.input, stream);
  }
};

template <class Op, class in_at, class out_at>
void run_cuda(const Plan& plan, at::Tensor& out) {
  using in_t = typename cuda_type<in_at>::type;
  using out_t = typename cuda_type<out_at>::type;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const in_t* in = reinterpret_cast<const in_t*>(plan.input.const_data_ptr());
  const Geometry g = launch_geometry(plan.geom, sizeof(in_t));
  const Launch lc = plan_launch<Op, in_t, out_t>(g, in, sms);
  const SplitScratch<typename Op::acc_t> scratch(plan, lc.partials, lc.counters, stream);
  run_launch<Op, in_t, out_t>(lc, g, in, reinterpret_cast<out_t*>(out.mutable_data_ptr()),
                              scratch.partials, scratch.counters, stream);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The forced configuration of the canonical kernels, set by the private op
// treduce::_force_launch(spec) (tests and the bench; reduce_cuda.cu), "" for the default plan:
// "y=Y,per=P,splits=S,rounds=R,lat=L,small=T" forces Y leaf lanes per block, P adjacent leaves
// per thread and round, S blocks per output tile, R rounds per split (each optional; a split is
// a node of the tree that one block computes), the latency kernel off (L = 0) or wherever the
// shape allows it (L = 1) and the one-block-per-output kernel off (T = 0) or wherever the
// layout allows it (T = 1); with small=1, "threads=N" and "loop=C" force its chunks' threads
// per block and (aligned float32 and 16-bit chunks of one leaf per thread) chunks per block,
// and "cluster=U" an output's chunks merged in a thread-block cluster (U = 1, where one block
// takes each and there are at most 8) or through global memory (U = 0); "whole=W" one block per
// output through canon_small_kernel's instantiation without the chunks' merge (W = 1) or with
// it (W = 0);
// "plain" sends floating sums and means to the plain kernels (float accumulators) instead (the
// bench's baseline). canon_mode() is the default plan unless a configuration is forced: one
// atomic load per call.
struct CanonMode {
  bool plain = false;
  CanonOverride force{};
};
CanonMode canon_mode();

// Floating sums and means in the canonical order (canon_config.cuh): the same steps as run_cuda.
template <class Op, class in_at, class out_at>
void run_canon(const Plan& plan, at::Tensor& out, const CanonOverride& force) {
  using in_t = typename cuda_type<in_at>::type;
  using out_t = typename cuda_type<out_at>::type;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const in_t* in = reinterpret_cast<const in_t*>(plan.input.const_data_ptr());
  const Geometry g = launch_geometry(plan.geom, sizeof(in_t));
  const bool clusters = at::cuda::getCurrentDeviceProperties()->major >= 9;
  const CanonLaunch lc = plan_canon<Op, in_t, out_t>(g, in, sms, force, clusters);
  TORCH_CHECK(lc.ok, "treduce.", op_name(plan.kind), ": ", plan.geom.reduce_len,
              " reduced elements per output is more than the canonical kernels support");
  const SplitScratch<typename Op::acc_t> scratch(plan, lc.partials, lc.counters, stream);
  run_canon_launch<Op, in_t, out_t>(lc, g, in, reinterpret_cast<out_t*>(out.mutable_data_ptr()),
                                    scratch.partials, scratch.counters, stream);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// One launcher per op family, each in its own translation unit (they compile in parallel).
void sum_cuda_launch(const Plan& plan, at::Tensor& out);      // sum_cuda.cu
void mean_cuda_launch(const Plan& plan, at::Tensor& out);     // mean_cuda.cu
void prod_cuda_launch(const Plan& plan, at::Tensor& out);     // prod_cuda.cu
void extreme_cuda_launch(const Plan& plan, at::Tensor& out);  // extreme_cuda.cu: amax, amin
void arg_cuda_launch(const Plan& plan, at::Tensor& out);      // arg_cuda.cu: argmax, argmin
void bitwise_cuda_launch(const Plan& plan, at::Tensor& out);  // bitwise_cuda.cu

}  // namespace treduce
