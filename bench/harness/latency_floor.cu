// Where a small sum's eager time goes (issue 3, goal 5; bench/NOTES.md step 125), the way
// do_bench measures it: a 256 MB memset, then an event, one launch, an event; median of 200.
// Empty kernels with small and large parameter blocks, in clusters of 8 and with dynamic shared
// memory, and the full float32 sums of 2^16 and 2^20 through plan_canon (default and forced)
// and the plain kernel. Also 100 launches back to back per pair of events (no flush).
// Build: nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O3 -Icsrc -o latency_floor \
//   bench/harness/latency_floor.cu; run: ./latency_floor
#include <cstdio>
#include <vector>
#include <algorithm>
#include "cuda/kernels/launch.cuh"
using namespace treduce;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
struct Big { int64_t v[58]; };
__global__ void k_small(int* p) { if (threadIdx.x == 0 && p[0] == 12345) p[1] = 1; }
__global__ void k_big(int* p, const Big b) { if (threadIdx.x == 0 && b.v[57] == 12345) p[1] = 1; }
__global__ void __cluster_dims__(8, 1, 1) k_cl(int* p) { if (threadIdx.x == 0 && p[0] == 12345) p[1] = 1; }
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
static Geometry geom(int64_t K) {
  Geometry g; g.num_outputs = 1; g.reduce_len = K;
  g.kept.ndim = 0; g.red.ndim = 1; g.red.sizes[0] = K; g.red.in_strides[0] = 1;
  return g;
}
int main() {
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* in; CK(cudaMalloc(&in, (1 << 22) * 4)); CK(cudaMemset(in, 0, (1 << 22) * 4));
  float* out; CK(cudaMalloc(&out, 4096));
  double* part; CK(cudaMalloc(&part, 1 << 24));
  unsigned* cnt; CK(cudaMalloc(&cnt, 1 << 20)); CK(cudaMemset(cnt, 0, 1 << 20));
  int* p; CK(cudaMalloc(&p, 64)); CK(cudaMemset(p, 0, 64));
  char* flush; CK(cudaMalloc(&flush, 256 << 20));
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  Big b{}; 
  auto timeit = [&](const char* name, auto go) {
    for (int i = 0; i < 20; ++i) go();
    std::vector<double> t, tb;
    for (int i = 0; i < 200; ++i) {
      CK(cudaMemsetAsync(flush, i, 256 << 20, st));
      CK(cudaEventRecord(e0, st)); go(); CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms * 1000);
    }
    for (int r = 0; r < 5; ++r) {
      CK(cudaEventRecord(e0, st)); for (int i = 0; i < 100; ++i) go(); CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); tb.push_back(ms * 10);
    }
    CK(cudaGetLastError());
    printf("%-34s flushed-eager %6.2f us   back-to-back %6.2f us\n", name, med(t), med(tb));
  };
  timeit("empty <<<1,32>>>", [&] { k_small<<<1, 32, 0, st>>>(p); });
  timeit("empty 464 B params <<<1,32>>>", [&] { k_big<<<1, 32, 0, st>>>(p, b); });
  timeit("empty <<<16,256>>>", [&] { k_small<<<16, 256, 0, st>>>(p); });
  timeit("empty cluster 8 <<<16,256>>>", [&] { k_cl<<<16, 256, 0, st>>>(p); });
  timeit("empty 20 KB dyn smem <<<16,256>>>", [&] { k_small<<<16, 256, 20480, st>>>(p); });
  for (int64_t K : {int64_t(1) << 16, int64_t(1) << 20}) {
    Geometry g = launch_geometry(geom(K), 4);
    const char* names[] = {"default", "small=1", "small=1,cluster=0", "lat=0"};
    for (int v = 0; v < 4; ++v) {
      CanonOverride ov{};
      if (v == 1) ov.small = 1;
      if (v == 2) { ov.small = 1; ov.cluster = 0; }
      if (v == 3) ov.lat = 0;
      CanonLaunch lc = plan_canon<WideSumOp<float>, float, float>(g, in, sms, ov, true);
      char nm[96]; snprintf(nm, sizeof nm, "2^%d %s (grid %ux%u blk %u lat%d sm%d cl%d)", K == (1 << 16) ? 16 : 20, names[v], lc.grid.x, lc.grid.y, lc.block.x, int(lc.lat), int(lc.small), int(lc.cluster));
      timeit(nm, [&] { run_canon_launch<WideSumOp<float>, float, float>(lc, g, in, out, part, cnt, st); });
    }
    Launch pl = plan_launch<SumOp<float>, float, float>(g, in, sms);
    char nm[64]; snprintf(nm, sizeof nm, "2^%d plain (grid %ux%u)", K == (1 << 16) ? 16 : 20, pl.grid.x, pl.grid.y);
    timeit(nm, [&] { run_launch<SumOp<float>, float, float>(pl, g, in, out, reinterpret_cast<float*>(part), cnt, st); });
  }
  return 0;
}
