// bfloat16 rows (16384, 32768), one block per row at two leaves per thread (NOTES step 151):
// canon_small_kernel's chunk instantiation (kWhole = false, the kernel main ran before step 151)
// against kernels that call the same canon_small_node and store, with tree_over_block (kFlat,
// step 133) or tree_over_y; 30 launches each after a 256 MB memset (harness.cuh), three passes,
// the bits compared. On the H200:
//   nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O3 -Icsrc -Ibench/harness \
//     -o /tmp/small_whole bench/harness/small_whole.cu && /tmp/small_whole
#include <cuda_bf16.h>
#include <cstring>
#include "harness.cuh"
#include "cuda/kernels/canon.cuh"
using namespace treduce;
template <bool kFlat>
__global__ void __launch_bounds__(kCanonThreads)
    rows2(const __nv_bfloat16* __restrict__ in, float* __restrict__ out, const Geometry g) {
  using Op = WideSumOp<float>;
  __shared__ double sm[kCanonThreads];
  extern __shared__ __align__(16) unsigned char small_stage[];
  const int64_t o = blockIdx.x;
  const __nv_bfloat16* __restrict__ p = in + g.kept.in_offset(o);
  const int tid = threadIdx.x, lane = tid & 31;
  const double a = canon_small_node<Op, __nv_bfloat16, 2, false, kFlat>(p, g.reduce_len, g, tid, lane, sm, small_stage);
  if (tid == 0) out[g.kept.out_offset(o)] = from_acc<float>(Op::finalize(a, g.reduce_len, g.num_outputs));
}
// Sum of four hashed uniforms, centred: roughly normal, as torch.randn's values.
__global__ void normal(__nv_bfloat16* p, int64_t n, unsigned seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float s = 0.f;
    for (int k = 0; k < 4; ++k) {
      unsigned h = unsigned(i * 4 + k) * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
      s += float(h & 0xffffff) / float(1 << 24);
    }
    p[i] = __float2bfloat16((s - 2.f) * 1.7f);
  }
}
int main() {
  const int64_t M = 16384, K = 32768;
  Geometry g;
  g.num_outputs = M; g.reduce_len = K;
  g.kept.ndim = 1; g.kept.sizes[0] = M; g.kept.in_strides[0] = K; g.kept.out_strides[0] = 1;
  g.red.ndim = 1; g.red.sizes[0] = K; g.red.in_strides[0] = 1;
  g.evict_first = false;
  Buffers b(M * K * 2);
  fill<__nv_bfloat16><<<1024, 256>>>((__nv_bfloat16*)b.in, M * K, 7);
  CK(cudaDeviceSynchronize());
  const size_t stage = 8 * LeafStage<__nv_bfloat16>::kSmallVecs * 16;
  auto lib = [&] { canon_small_kernel<WideSumOp<float>, __nv_bfloat16, float, 2, false, false><<<M, 256, stage, b.st>>>((const __nv_bfloat16*)b.in, (float*)b.out, g, (double*)b.part, b.cnt, 0, 0); };
  auto flat = [&] { rows2<true><<<M, 256, stage, b.st>>>((const __nv_bfloat16*)b.in, (float*)b.out + M, g); };
  auto lib16 = [&] { canon_small_kernel<WideSumOp<float>, __nv_bfloat16, __nv_bfloat16, 2, false, false><<<M, 256, stage, b.st>>>((const __nv_bfloat16*)b.in, (__nv_bfloat16*)b.out + 6 * M, g, (double*)b.part, b.cnt, 0, 0); };
  auto tree = [&] { rows2<false><<<M, 256, stage, b.st>>>((const __nv_bfloat16*)b.in, (float*)b.out + 2 * M, g); };
  int occ[3];
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[0], canon_small_kernel<WideSumOp<float>, __nv_bfloat16, float, 2, false, false>, 256, stage));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[1], rows2<true>, 256, stage));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[2], rows2<false>, 256, stage));
  printf("occupancy lib %d flat %d tree %d\n", occ[0], occ[1], occ[2]);
  for (int pass = 0; pass < 3; ++pass) {
    double t0 = time_flushed(lib, 30, b.flush, b.st), t1 = time_flushed(flat, 30, b.flush, b.st), t2 = time_flushed(tree, 30, b.flush, b.st), t3 = time_flushed(lib16, 30, b.flush, b.st);
    printf("pass %d flushed us: lib %.1f flat %.1f tree %.1f lib(out bf16) %.1f\n", pass, t0, t1, t2, t3);
    if (pass == 1) { normal<<<1024, 256>>>((__nv_bfloat16*)b.in, M * K, 9); CK(cudaDeviceSynchronize()); printf("normal-ish data from here\n"); }
  }
  std::vector<float> h(3 * M);
  CK(cudaMemcpy(h.data(), b.out, 3 * M * 4, cudaMemcpyDeviceToHost));
  printf("bits flat==lib %d tree==lib %d  out[0]=%.6g\n", memcmp(h.data(), h.data() + M, M * 4) == 0, memcmp(h.data(), h.data() + 2 * M, M * 4) == 0, h[0]);
}
