// CUDA backend entry points: device guard, then the shared op entry (plan.cpp) with this backend's
// launcher, which hands the call to the kernel units (call.cuh); plus the pool of self-resetting
// counters used by split reductions, and the scratch of split launches.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "../dispatch.h"
#include "../plan.h"
#include "call.cuh"

namespace treduce {

// A split reduction's blocks count their arrivals in a counter that the last block resets, so a
// counter is zero before and after every kernel. One pool per (device, stream) serves every
// launch on that stream, which runs them one after another. A launch recorded in a CUDA graph
// uses a pool of its own capture, zeroed by a memset recorded in that capture (at the pool's
// first use): replays then never share counters with eager launches. Pools are never freed,
// since a graph may still refer to one; each is kCounterCapacity * 4 bytes.
//
// The pools are raw device memory (cudaMalloc, kSlabPools pools at a time), not tensors of the
// caching allocator: torch.compile's CUDA graphs (mode="reduce-overhead") route every caching
// allocation made during their warm-up and capture to the graph's private pool, and reject a
// graph that leaves live tensors there which it does not return; a tensor pool would also pin
// a segment of a freed graph's pool. Each captured graph with a split launch keeps 16 KiB for
// the process's life, nothing more.
namespace {
constexpr int64_t kSlabPools = 16;  // pools per cudaMalloc (256 KiB)

// A new pool of zeroed counters on `stream` (the memset is recorded when the stream captures).
unsigned* new_counter_pool(int device, cudaStream_t stream) {
  static auto* slabs = new std::map<int, std::pair<unsigned*, int64_t>>();  // next pool, left
  auto& [next, left] = (*slabs)[device];
  if (left == 0) {
    // cudaMalloc is not a stream operation; the relaxed mode lets it run while a stream of this
    // thread captures (as the caching allocator does).
    c10::cuda::CUDAStreamCaptureModeGuard relaxed(cudaStreamCaptureModeRelaxed);
    void* slab = nullptr;
    C10_CUDA_CHECK(cudaMalloc(&slab, kSlabPools * kCounterCapacity * sizeof(unsigned)));
    next = static_cast<unsigned*>(slab);
    left = kSlabPools;
  }
  unsigned* pool = next;
  next += kCounterCapacity;
  --left;
  C10_CUDA_CHECK(cudaMemsetAsync(pool, 0, kCounterCapacity * sizeof(unsigned), stream));
  return pool;
}
}  // namespace

// kCounterCapacity zeroed counters owned by (device, stream, graph capture).
unsigned* counter_pool(const at::Tensor& like, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long capture_id = 0;
  C10_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, &capture_id));
  if (status != cudaStreamCaptureStatusActive) capture_id = 0;
  using Key = std::tuple<int, cudaStream_t, unsigned long long>;
  static std::mutex mutex;
  static auto* pools = new std::map<Key, unsigned*>();  // never destroyed
  const int device = like.get_device();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools->find(Key{device, stream, capture_id});
  if (it == pools->end())
    it = pools->emplace(Key{device, stream, capture_id}, new_counter_pool(device, stream)).first;
  return it->second;
}

namespace {

// Parses a forced configuration (call.cuh: CanonMode); "" is the default plan.
CanonMode parse_canon_mode(const std::string& spec) {
  CanonMode m;
  if (spec.empty()) return m;
  if (spec == "plain") {
    m.plain = true;
    return m;
  }
  size_t pos = 0;
  while (pos < spec.size()) {
    const size_t end = std::min(spec.find(',', pos), spec.size());
    const std::string item = spec.substr(pos, end - pos);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const long value =
        eq == std::string::npos ? -1 : std::strtol(item.c_str() + eq + 1, nullptr, 10);
    if (key == "y") {
      TORCH_CHECK(value >= 1 && value <= kCanonThreads && (value & (value - 1)) == 0,
                  "treduce._force_launch: y must be a power of two from 1 to ", kCanonThreads,
                  " (got '", item, "')");
      m.force.y = static_cast<int>(value);
    } else if (key == "rounds") {
      TORCH_CHECK(value >= 1 && value <= (1 << 20) && (value & (value - 1)) == 0,
                  "treduce._force_launch: rounds must be a power of two from 1 to 2^20 (got '",
                  item, "')");
      m.force.rounds = static_cast<int>(value);
    } else if (key == "per") {
      TORCH_CHECK(value == 1 || value == 2, "treduce._force_launch: per must be 1 or 2 (got '",
                  item, "')");
      m.force.per = static_cast<int>(value);
    } else if (key == "lat") {
      TORCH_CHECK(value == 0 || value == 1, "treduce._force_launch: lat must be 0 or 1 (got '",
                  item, "')");
      m.force.lat = static_cast<int>(value);
    } else if (key == "small") {
      TORCH_CHECK(value == 0 || value == 1, "treduce._force_launch: small must be 0 or 1 (got '",
                  item, "')");
      m.force.small = static_cast<int>(value);
    } else if (key == "threads") {
      TORCH_CHECK(value == 64 || value == 128 || value == 256,
                  "treduce._force_launch: threads must be 64, 128 or 256 (got '", item, "')");
      m.force.threads = static_cast<int>(value);
    } else if (key == "loop") {
      TORCH_CHECK(value >= 1 && value <= 64,
                  "treduce._force_launch: loop must be from 1 to 64 (got '", item, "')");
      m.force.loop = static_cast<int>(value);
    } else if (key == "cluster") {
      TORCH_CHECK(value == 0 || value == 1, "treduce._force_launch: cluster must be 0 or 1 (got '",
                  item, "')");
      m.force.cluster = static_cast<int>(value);
    } else if (key == "whole") {
      TORCH_CHECK(value == 0 || value == 1, "treduce._force_launch: whole must be 0 or 1 (got '",
                  item, "')");
      m.force.whole = static_cast<int>(value);
    } else if (key == "tile") {
      TORCH_CHECK(value == 0 || value == 1, "treduce._force_launch: tile must be 0 or 1 (got '",
                  item, "')");
      m.force.tile = static_cast<int>(value);
    } else if (key == "copy") {
      TORCH_CHECK(value == 0 || value == 1, "treduce._force_launch: copy must be 0 or 1 (got '",
                  item, "')");
      m.copy = static_cast<int>(value);
    } else if (key == "vec") {
      TORCH_CHECK(value == 0, "treduce._force_launch: vec must be 0 (got '", item, "')");
      m.vec_cols = 0;
    } else if (key == "splits") {
      TORCH_CHECK(value >= 1 && value <= 65535,
                  "treduce._force_launch: splits must be from 1 "
                  "to 65535 (got '",
                  item, "')");
      m.force.splits = static_cast<int>(value);
    } else {
      TORCH_CHECK(false,
                  "treduce._force_launch: expected 'plain' or "
                  "'y=Y,per=P,splits=S,rounds=R,lat=L,small=T,threads=N,loop=C,cluster=U,whole=W,"
                  "tile=S,copy=C,vec=0', "
                  "got '",
                  spec, "'");
    }
    pos = end + 1;
  }
  return m;
}

std::mutex forced_mutex;
CanonMode forced_mode;                // guarded by forced_mutex
std::atomic<bool> any_forced{false};  // forced_mode differs from the default plan

// treduce::_force_launch(spec): forces (or with "" releases) the canonical kernels' launch
// configuration for every later call in this process. For tests and the bench only; a spec
// that does not parse raises and leaves the current one in place.
void force_launch(const std::string& spec) {
  const CanonMode m = parse_canon_mode(spec);
  const std::lock_guard<std::mutex> lock(forced_mutex);
  forced_mode = m;
  any_forced.store(!spec.empty(), std::memory_order_release);
}

}  // namespace

CanonMode canon_mode() {
  if (!any_forced.load(std::memory_order_acquire)) return CanonMode{};  // the production path
  const std::lock_guard<std::mutex> lock(forced_mutex);
  return forced_mode;
}

TORCH_LIBRARY_FRAGMENT(treduce, m) { m.def("_force_launch(str spec) -> ()", &force_launch); }

namespace {

// A split launch's scratch from PyTorch's caching allocator, held until the call returns (the
// launch is queued on the stream by then, which the allocator's reuse follows), and the stream's
// counters.
class TorchScratch final : public ScratchSource {
 public:
  TorchScratch(const at::Tensor& like, cudaStream_t stream) : like_(like), stream_(stream) {}
  Scratch take(int64_t bytes) override {
    buffer_ = at::empty({bytes}, like_.options().dtype(at::kByte));
    return Scratch{buffer_.data_ptr(), counter_pool(like_, stream_)};
  }

 private:
  const at::Tensor& like_;
  cudaStream_t stream_;
  at::Tensor buffer_;
};

// Each op family's kernels for the input's dtype; the plan (plan.cpp) sends them no other dtype.
void launch_kernels(const CudaCall& call) {
  switch (call.kind) {
    case OpKind::kSum:
      return visit_dtype<true>(call.in_dtype,
                               [&](auto t) { sum_kernels<typename decltype(t)::type>(call); });
    case OpKind::kMean:
      return visit_dtype<true>(call.in_dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        if constexpr (std::is_integral_v<T>) {
          TORCH_INTERNAL_ASSERT(false, "treduce.mean: an integer input reached the kernels");
        } else {
          mean_kernels<T>(call);
        }
      });
    case OpKind::kProd:
      return visit_dtype(call.in_dtype,
                         [&](auto t) { prod_kernels<typename decltype(t)::type>(call); });
    case OpKind::kAmax:
    case OpKind::kAmin:
      return visit_dtype<true>(call.in_dtype,
                               [&](auto t) { extreme_kernels<typename decltype(t)::type>(call); });
    case OpKind::kArgmax:
    case OpKind::kArgmin:
      return visit_dtype(call.in_dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        if constexpr (std::is_same_v<T, bool>) {
          TORCH_INTERNAL_ASSERT(false, "treduce: bool input reached an arg kernel");
        } else {
          arg_kernels<T>(call);
        }
      });
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor:
      return visit_dtype(call.in_dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        if constexpr (std::is_integral_v<T>) {
          bitwise_kernels<T>(call);
        } else {
          TORCH_INTERNAL_ASSERT(false, "treduce: floating-point input reached a bitwise kernel");
        }
      });
  }
}

// The largest input whose transposed reduced blocks are copied into the canonical order before
// the reduction. H100: copy then reduce took 0.35-0.81x the time of the in-place walk on all 72
// transposed blocks of 0.05-6.1 MB measured (transposed H x W maps over (2, 3) and (0, 2, 3),
// NHWC over (1, 2, 3), float32 and bfloat16), but up to 1.47x at 12-98 MB (NHWC); see
// docs/perf-log.md 2026-12-06.
constexpr int64_t kCopyTransposedMaxBytes = int64_t(8) << 20;
// Larger inputs are copied where each transposed tile (the reduced elements from the contiguous
// reduced dim inward) has at most kCopySmallTileElems elements, up to kCopySmallTilesMaxBytes.
// H100, 12-98 MiB: H x W maps of 28 x 28 and 56 x 56 stored transposed, copy 0.51-0.83x the
// walk's time (22 shapes); 112 x 112 maps 0.69-1.19x; channels-last images over (C, H, W), C x HW
// tiles of 50,176-3.2M elements, 0.93-1.58x (docs/perf-log.md 2026-12-06).
constexpr int64_t kCopySmallTileElems = 4096;
constexpr int64_t kCopySmallTilesMaxBytes = int64_t(100) << 20;

// Whether a floating sum's (mean's, product's) reduced elements, which the canonical order reads
// in the tensor's logical order, lie in memory in another order: the innermost logical reduced
// dim is neither contiguous nor a step of two (the kernels' strided loads, canon_kernel's step)
// while another reduced dim is contiguous, as in the H x W maps of a tensor transposed in memory
// or channels-last images reduced over (C, H, W). The kernels then walk the elements one by one;
// a copy in the canonical order reads them coalesced and leaves contiguous rows.
bool copies_transposed_block(const Plan& plan, const CanonMode& mode) {
  const IndexMap& r = plan.geom.red;
  if (!plan.canonical || mode.plain || mode.copy == 0 || !reduced_block_transposed(r)) return false;
  if (mode.copy < 0 &&
      tile_stage(plan.geom, static_cast<int>(plan.input.element_size()), mode.force))
    return false;  // canon_tile_kernel stages it in place
  int contiguous_dim = -1;
  for (int d = 0; d < r.ndim - 1; ++d)
    if (r.in_strides[d] == 1) contiguous_dim = d;
  if (contiguous_dim < 0) return false;
  const int64_t bytes = plan.input.numel() * plan.input.element_size();
  int64_t tile = 1;
  for (int d = contiguous_dim; d < r.ndim; ++d) tile *= r.sizes[d];
  return mode.copy == 1 || bytes <= kCopyTransposedMaxBytes ||
         (tile <= kCopySmallTileElems && bytes <= kCopySmallTilesMaxBytes);
}

// The plan over a copy of its input in the canonical order: each output's K reduced elements
// contiguous, the outputs in the kept dims' order (kept dims that are then contiguous in the
// input and in the result merged). The same elements in the same order, so the same bits.
Plan copy_transposed_block(const Plan& plan) {
  const Geometry& g = plan.geom;
  std::vector<int64_t> sizes, strides;
  for (int d = 0; d < g.kept.ndim; ++d) {
    sizes.push_back(g.kept.sizes[d]);
    strides.push_back(g.kept.in_strides[d]);
  }
  for (int d = 0; d < g.red.ndim; ++d) {
    sizes.push_back(g.red.sizes[d]);
    strides.push_back(g.red.in_strides[d]);
  }
  Plan p = plan;
  p.input = plan.input.as_strided(sizes, strides, plan.input.storage_offset()).contiguous();
  IndexMap kept;
  int64_t step = g.reduce_len;  // the copy's stride of the innermost kept dim
  for (int d = g.kept.ndim - 1; d >= 0; --d) {
    const int64_t size = g.kept.sizes[d], in_stride = step, out_stride = g.kept.out_strides[d];
    step *= size;
    if (kept.ndim > 0 && out_stride == kept.out_strides[0] * kept.sizes[0]) {
      kept.sizes[0] *= size;  // contiguous with the dim inside it: one dim
      continue;
    }
    for (int i = kept.ndim; i > 0; --i) {  // prepend: dims are outermost first
      kept.sizes[i] = kept.sizes[i - 1];
      kept.in_strides[i] = kept.in_strides[i - 1];
      kept.out_strides[i] = kept.out_strides[i - 1];
    }
    kept.sizes[0] = size;
    kept.in_strides[0] = in_stride;
    kept.out_strides[0] = out_stride;
    ++kept.ndim;
  }
  p.geom.kept = kept;
  p.geom.red = IndexMap{};
  p.geom.red.ndim = 1;
  p.geom.red.sizes[0] = g.reduce_len;
  p.geom.red.in_strides[0] = 1;
  return p;
}

// This backend's kernel for every op: the call, as the kernel units see it, on the current
// stream; then the launch's check.
void cuda_launch(const Plan& given, at::Tensor& out) {
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const cudaDeviceProp* props = at::cuda::getCurrentDeviceProperties();
  const CanonMode mode = canon_mode();
  const Plan plan = copies_transposed_block(given, mode) ? copy_transposed_block(given) : given;
  TorchScratch scratch(plan.input, stream);
  const CudaCall call{plan.kind,
                      plan.input.scalar_type(),
                      plan.out_dtype,
                      plan.input.const_data_ptr(),
                      out.mutable_data_ptr(),
                      plan.geom,
                      stream,
                      props->multiProcessorCount,
                      props->major >= 9,
                      mode,
                      &scratch};
  launch_kernels(call);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// A device guard for the input's device around everything (plan, allocation, counters, launch),
// then the shared entry for each schema form of plan.h.
// Floating sums, means and products keep the reduced dims in logical order: the canonical order
// (canon_config.cuh).
template <OpKind K>
at::Tensor with_dtype(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                      std::optional<at::ScalarType> dtype) {
  const c10::cuda::OptionalCUDAGuard guard(self.device());
  return entry_dtype<K, &cuda_launch, /*kLogical=*/true>(self, dim, keepdim, dtype);
}
template <OpKind K>
at::Tensor with_dims(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  const c10::cuda::OptionalCUDAGuard guard(self.device());
  return entry_dims<K, &cuda_launch>(self, dim, keepdim);
}
template <OpKind K>
at::Tensor with_opt_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  const c10::cuda::OptionalCUDAGuard guard(self.device());
  return entry_opt_dims<K, &cuda_launch>(self, dim, keepdim);
}
template <OpKind K>
at::Tensor with_arg(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const c10::cuda::OptionalCUDAGuard guard(self.device());
  return entry_arg<K, &cuda_launch>(self, dim, keepdim);
}

}  // namespace

TORCH_LIBRARY_IMPL(treduce, CUDA, m) {
  m.impl("sum", &with_dtype<OpKind::kSum>);
  m.impl("mean", &with_dtype<OpKind::kMean>);
  m.impl("prod", &with_dtype<OpKind::kProd>);
  m.impl("amax", &with_dims<OpKind::kAmax>);
  m.impl("amin", &with_dims<OpKind::kAmin>);
  m.impl("argmax", &with_arg<OpKind::kArgmax>);
  m.impl("argmin", &with_arg<OpKind::kArgmin>);
  m.impl("bitwise_and", &with_opt_dims<OpKind::kAnd>);
  m.impl("bitwise_or", &with_opt_dims<OpKind::kOr>);
  m.impl("bitwise_xor", &with_opt_dims<OpKind::kXor>);
}

}  // namespace treduce
