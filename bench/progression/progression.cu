// progression.cu: the seed notes' reduction, one step per kernel, for the measured tutorial
// (bench/progression/run.py) and its CUDA test (tests/test_progression.py). float32 sums with a
// float32 accumulator, as in the notes; raw CUDA and a thin torch binding.
//
//   1 atomic        one atomicAdd per element onto one address
//   2 interleaved   tree in shared memory, stride doubling, `tid % (2s) == 0` (divergent warps)
//   3 strided index the same tree, thread tid working on index 2*s*tid (no divergence, bank
//                   conflicts)
//   4 sequential    stride halving, `tid < s`: active threads packed, conflict-free
//   5 first add     each thread adds two elements while loading (half the blocks)
//   6 warp shuffle  the tree down to 32 values, then __shfl_down_sync (no barrier, no shared memory)
//   7 many/thread   a fixed grid (8 blocks per SM), each thread a grid-stride loop
//   8 vectorised    step 7 with 16-byte loads (float4), four in flight per thread
//
// Steps 2-8 write one partial per block; the same kernel then reduces the partials until one value
// is left (the notes' multi-pass scheme), so each step is timed with its own combine.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

namespace {

constexpr int kBlock = 256;

__global__ void atomic_kernel(const float* in, float* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, in[i]);
}

// Steps 2-4: one element per thread into shared memory, then a tree.
template <int kStep>
__global__ void tree_kernel(const float* in, float* out, int64_t n) {
  __shared__ float s[kBlock];
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + tid;
  s[tid] = i < n ? in[i] : 0.f;
  __syncthreads();
  if constexpr (kStep == 2) {
    for (unsigned k = 1; k < kBlock; k *= 2) {
      if (tid % (2 * k) == 0) s[tid] += s[tid + k];
      __syncthreads();
    }
  } else if constexpr (kStep == 3) {
    for (unsigned k = 1; k < kBlock; k *= 2) {
      const unsigned index = 2 * k * tid;
      if (index < kBlock) s[index] += s[index + k];
      __syncthreads();
    }
  } else {
    for (unsigned k = kBlock / 2; k > 0; k >>= 1) {
      if (tid < k) s[tid] += s[tid + k];
      __syncthreads();
    }
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Steps 5-6: two elements per thread on load, sequential tree; step 6 finishes with shuffles.
template <bool kShuffle>
__global__ void first_add_kernel(const float* in, float* out, int64_t n) {
  __shared__ float s[kBlock];
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * (2 * kBlock) + tid;
  float v = i < n ? in[i] : 0.f;
  if (i + kBlock < n) v += in[i + kBlock];
  s[tid] = v;
  __syncthreads();
  // With kShuffle the tree stops at 64 values; the first warp adds the two halves and shuffles.
  for (unsigned k = kBlock / 2; k > (kShuffle ? 32u : 0u); k >>= 1) {
    if (tid < k) s[tid] += s[tid + k];
    __syncthreads();
  }
  if constexpr (kShuffle) {
    if (tid < 32) {
      v = s[tid] + s[tid + 32];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    }
  } else {
    v = s[0];
  }
  if (tid == 0) out[blockIdx.x] = v;
}

// The block's sum of each thread's v: shuffles within warps, then the warps' sums.
__device__ float block_sum(float v) {
  __shared__ float warps[kBlock / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = v;
  __syncthreads();
  v = threadIdx.x < kBlock / 32 ? warps[threadIdx.x] : 0.f;
  if (threadIdx.x < 32)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// Steps 7-8: a fixed grid; each thread loops over the input (step 8: float4, four per iteration).
template <bool kVec>
__global__ void grid_stride_kernel(const float* in, float* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x;
  float v = 0.f;
  if constexpr (kVec) {
    const float4* in4 = reinterpret_cast<const float4*>(in);
    const int64_t n4 = n / 4;
    int64_t i = t;
    for (; i + 3 * stride < n4; i += 4 * stride) {
      const float4 a = in4[i], b = in4[i + stride], c = in4[i + 2 * stride],
                   d = in4[i + 3 * stride];
      v += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w)) +
           ((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w));
    }
    for (; i < n4; i += stride) {
      const float4 a = in4[i];
      v += (a.x + a.y) + (a.z + a.w);
    }
    for (int64_t j = 4 * n4 + t; j < n; j += stride) v += in[j];  // the tail
  } else {
    for (int64_t i = t; i < n; i += stride) v += in[i];
  }
  v = block_sum(v);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// Blocks for n elements at step `step`.
int64_t blocks_for(int step, int64_t n) {
  if (step >= 7) {
    const int64_t fill = at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 8;
    return std::max<int64_t>(1, std::min(fill, (n + kBlock - 1) / kBlock));
  }
  const int64_t per_block = step >= 5 ? 2 * kBlock : kBlock;
  return (n + per_block - 1) / per_block;
}

void launch(int step, const float* in, float* out, int64_t n, int64_t blocks, cudaStream_t st) {
  switch (step) {
    case 2: tree_kernel<2><<<blocks, kBlock, 0, st>>>(in, out, n); break;
    case 3: tree_kernel<3><<<blocks, kBlock, 0, st>>>(in, out, n); break;
    case 4: tree_kernel<4><<<blocks, kBlock, 0, st>>>(in, out, n); break;
    case 5: first_add_kernel<false><<<blocks, kBlock, 0, st>>>(in, out, n); break;
    case 6: first_add_kernel<true><<<blocks, kBlock, 0, st>>>(in, out, n); break;
    case 7: grid_stride_kernel<false><<<blocks, kBlock, 0, st>>>(in, out, n); break;
    default: grid_stride_kernel<true><<<blocks, kBlock, 0, st>>>(in, out, n); break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The sum of x (contiguous float32 on the GPU) by step 1-8, as a one-element tensor.
at::Tensor progression_sum(const at::Tensor& x, int64_t step) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.is_contiguous(),
              "progression_sum: a contiguous float32 CUDA tensor");
  TORCH_CHECK(step >= 1 && step <= 8, "progression_sum: step 1-8");
  TORCH_CHECK(step != 8 || reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0,
              "step 8 needs a 16-byte aligned input");
  c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t st = at::cuda::getCurrentCUDAStream();
  int64_t n = x.numel();
  if (step == 1) {
    at::Tensor out = at::zeros({1}, x.options());
    if (n > 0)
      atomic_kernel<<<(n + kBlock - 1) / kBlock, kBlock, 0, st>>>(x.data_ptr<float>(),
                                                                  out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
  }
  if (n == 0) return at::zeros({1}, x.options());
  at::Tensor cur = x;
  do {  // partials of partials until one is left
    const int64_t blocks = blocks_for(step, n);
    at::Tensor next = at::empty({blocks}, x.options());
    launch(step, cur.data_ptr<float>(), next.data_ptr<float>(), n, blocks, st);
    cur = next;
    n = blocks;
  } while (n > 1);
  return cur;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("progression_sum", &progression_sum, "the seed's reduction, step 1-8");
}
