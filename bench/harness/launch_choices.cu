// Which kernel run_canon_launch starts for random plans, without a GPU (bench/NOTES.md step 124's
// review): the runtime's launch entry points are interposed, and each launch prints the kernel's
// host stub as an offset from main (`nm -C` on the executable names it). Build it against two
// copies of csrc and compare the outputs:
//   nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O1 -IA/csrc -cudart shared \
//     -o launch_choices bench/harness/launch_choices.cu -ldl
// The same offsets in two builds of different launchers name the same kernels only where the
// kernel stubs keep their place (check with nm).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cstdio>
#include <random>
#include "reduce_ops.h"
#include "cuda/kernels/launch.cuh"
static const char* g_name = nullptr;
int main();
static char g_buf[64];
static const char* name_of(const void* f) { snprintf(g_buf, sizeof g_buf, "%lx", (unsigned long)((uintptr_t)f - (uintptr_t)&main)); return g_buf; }
extern "C" cudaError_t cudaLaunchKernel(const void* f, dim3, dim3, void**, size_t, cudaStream_t) { g_name = name_of(f); return cudaSuccess; }
extern "C" unsigned CUDARTAPI __cudaPushCallConfiguration(dim3, dim3, size_t, struct CUstream_st*) { return 0; }
extern "C" cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3*, dim3*, size_t*, void*) { return cudaSuccess; }
extern "C" cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* h, const void* f) { *h = (cudaKernel_t)f; return cudaSuccess; }
extern "C" cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t k, dim3, dim3, void**, size_t, cudaStream_t) { g_name = name_of((const void*)k); return cudaSuccess; }
extern "C" cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void* f, void**) { g_name = name_of(f); return cudaSuccess; }
using namespace treduce;
std::mt19937_64 rng(11);
template <class Op, class in_t>
void run(int n, const char* tn) {
  for (int i = 0; i < n; ++i) {
    Geometry g;
    const int64_t M = 1 + rng() % (rng() % 2 ? 8 : 3000), K = 1 + rng() % (rng() % 2 ? 40000 : 3000000);
    g.num_outputs = M; g.reduce_len = K;
    g.kept.ndim = M > 1 ? 1 : 0; g.kept.sizes[0] = M; g.kept.in_strides[0] = K; g.kept.out_strides[0] = 1;
    g.red.ndim = 1; g.red.sizes[0] = K; g.red.in_strides[0] = 1;
    const uintptr_t base = (uintptr_t(1) << 32) + (rng() % 3 == 0 ? 0 : (rng() % 16) / sizeof(in_t) * sizeof(in_t));
    const in_t* in = reinterpret_cast<const in_t*>(base);
    CanonOverride ov{};
    switch (rng() % 6) {
      case 0: break;
      case 1: ov.small = 1; break;
      case 2: ov.small = 1; ov.per = 1 + rng() % 2; break;
      case 3: ov.small = 1; ov.loop = 1 + rng() % 4; break;
      case 4: ov.small = 1; ov.per = 1 + rng() % 2; ov.loop = 1 + rng() % 4; ov.threads = 64 << (rng() % 3); break;
      default: ov.small = 0; break;
    }
    Geometry lg = launch_geometry(g, sizeof(in_t));
    CanonLaunch lc = plan_canon<Op, in_t, float>(lg, in, 132, ov, true);
    g_name = nullptr;
    run_canon_launch<Op, in_t, float>(lc, lg, in, nullptr, nullptr, nullptr, nullptr);
    printf("%s %lld %lld %d %d %d %d %d %s\n", tn, (long long)M, (long long)K, int(base % 16), ov.small, ov.per, ov.loop, ov.threads, g_name ? g_name : "none");
  }
}
int main() {
  run<WideSumOp<float>, __nv_bfloat16>(20000, "bf16");
  run<WideSumOp<float>, __half>(20000, "f16");
  run<WideSumOp<float>, float>(20000, "f32");
  run<WideSumOp<float>, __nv_fp8_e4m3>(20000, "fp8");
  run<CompSumOp<double>, double>(10000, "f64");
}
