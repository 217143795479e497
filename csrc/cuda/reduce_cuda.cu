// CUDA backend entry points: device guard, then the shared op entry (plan.cpp) with this backend's
// launchers; plus the pool of self-resetting counters used by split reductions.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <tuple>

#include "binding.cuh"

namespace treduce {

// A split reduction's blocks count their arrivals in a counter that the last block resets, so a
// counter is zero before and after every kernel. One pool per (device, stream) serves every
// launch on that stream, which runs them one after another. A launch recorded in a CUDA graph
// uses a pool of its own capture (zeroed by a memset recorded at the pool's creation, once per
// graph): replays then never share counters with eager launches. Pools are never freed, since
// a graph may still refer to one; each is kCounterCapacity * 4 bytes.
unsigned* counter_pool(const at::Tensor& like, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long capture_id = 0;
  C10_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, &capture_id));
  if (status != cudaStreamCaptureStatusActive) capture_id = 0;
  using Key = std::tuple<int, cudaStream_t, unsigned long long>;
  static std::mutex mutex;
  static std::map<Key, at::Tensor>* pools = new std::map<Key, at::Tensor>();  // never destroyed
  const Key key{like.get_device(), stream, capture_id};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools->find(key);
  if (it == pools->end()) {
    // at::zeros runs on the current stream (`stream`), so the zeroing precedes every use.
    at::Tensor pool = at::zeros({kCounterCapacity}, like.options().dtype(at::kInt));
    it = pools->emplace(key, std::move(pool)).first;
  }
  return reinterpret_cast<unsigned*>(it->second.data_ptr());
}

namespace {

// A device guard for the input's device around everything: plan, allocation and launch.
at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  const c10::cuda::OptionalCUDAGuard guard(self.device());
  return run_reduce(self, dim, keepdim, OpKind::kSum, dtype, &sum_cuda_launch);
}

at::Tensor amax_cuda(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  const c10::cuda::OptionalCUDAGuard guard(self.device());
  return run_reduce(self, dim, keepdim, OpKind::kAmax, std::nullopt, &amax_cuda_launch);
}

}  // namespace

// sum and amax so far; the other ops have CPU kernels only (issue 5 adds their CUDA kernels).
TORCH_LIBRARY_IMPL(treduce, CUDA, m) {
  m.impl("sum", &sum_cuda);
  m.impl("amax", &amax_cuda);
}

}  // namespace treduce
