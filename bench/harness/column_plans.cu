// plan_canon's launches for bfloat16 column and mid-dim sums, without a GPU (NOTES steps 152, 155):
// one line per shape with the lanes X, leaf lanes Y, grid, rounds, splits, rounds per split and
// merged nodes per thread. Build it against two copies of csrc and diff the outputs to see which
// plans a planner change moves:
//   g++ -c -fPIC bench/harness/occupancy_stub.cpp -o /tmp/occ.o
//   nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O1 -IA/csrc -cudart shared \
//     -o /tmp/plans_A bench/harness/column_plans.cu /tmp/occ.o
// The occupancy is a stub (occupancy_stub.cpp, 4 blocks per SM unless TREDUCE_OCCUPANCY says
// otherwise) and the SM count 132, so only kernels of that occupancy get the H200's plans.
#include <cuda_bf16.h>
#include <cstdio>
#include "reduce_ops.h"
#include "cuda/kernels/launch.cuh"
using namespace treduce;

static void show(const char* name, const Geometry& g) {
  const auto* in = reinterpret_cast<const __nv_bfloat16*>(uintptr_t(1) << 32);  // aligned
  const Geometry lg = launch_geometry(g, sizeof(__nv_bfloat16));
  const CanonLaunch lc =
      plan_canon<WideSumOp<float>, __nv_bfloat16, float>(lg, in, 132, CanonOverride{}, true);
  printf("%-22s small=%d grid=%u,%u X=%d Y=%d vec=%d rounds=%lld splits=%d rps=%lld merge=%d\n",
         name, lc.small, lc.grid.x, lc.grid.y, lc.cfg.X, lc.cfg.Y, lc.vec,
         (long long)lc.cfg.rounds, lc.cfg.splits, (long long)lc.cfg.rounds_per_split,
         lc.cfg.merge_per_thread);
}

// (A, B, C) contiguous, reduced over B: C columns (A = 1) or A x C mid-dim outputs.
static void mid(int64_t A, int64_t B, int64_t C) {
  Geometry g;
  g.num_outputs = A * C;
  g.reduce_len = B;
  g.kept.ndim = A == 1 ? 1 : 2;
  const int k = g.kept.ndim - 1;
  g.kept.sizes[0] = A;
  g.kept.in_strides[0] = B * C;
  g.kept.out_strides[0] = C;
  g.kept.sizes[k] = C;
  g.kept.in_strides[k] = 1;
  g.kept.out_strides[k] = 1;
  g.red.ndim = 1;
  g.red.sizes[0] = B;
  g.red.in_strides[0] = C;
  char name[64];
  snprintf(name, sizeof name, "(%lld,%lld,%lld)", (long long)A, (long long)B, (long long)C);
  show(name, g);
}

// NHWC statistics: (N, H x W, C) channels last, reduced over N and H x W.
static void nhwc(int64_t N, int64_t C, int64_t HW) {
  Geometry g;
  g.num_outputs = C;
  g.reduce_len = N * HW;
  g.kept.ndim = 1;
  g.kept.sizes[0] = C;
  g.kept.in_strides[0] = 1;
  g.kept.out_strides[0] = 1;
  g.red.ndim = 2;
  g.red.sizes[0] = N;
  g.red.sizes[1] = HW;
  g.red.in_strides[0] = C * HW;
  g.red.in_strides[1] = C;
  char name[64];
  snprintf(name, sizeof name, "NHWC(%lld,%lld,%lld)", (long long)N, (long long)C, (long long)HW);
  show(name, g);
}

int main() {
  const int64_t shapes[][3] = {
      {1, 32768, 16384}, {1, 16384, 16384}, {1, 4096, 4096},   {1, 8192, 8192},
      {64, 8192, 1024},  {64, 4096, 1024},  {1, 32768, 4096},  {1, 4194304, 32},
      {1, 1048576, 128}, {1, 262144, 128},  {1, 65536, 1024},  {1, 2048, 2048},
      {1, 1024, 1024},   {32, 1024, 512},   {1, 100000, 256},  {4, 65536, 512},
      {1, 512, 65536},   {1, 256, 262144},  {1, 128, 1048576}, {1, 8192, 512},
      {1, 1000000, 64},  {1, 16384, 2048}, {1, 2097152, 64}, {1, 1048576, 32}, {1, 8388608, 16},
      {1, 2097152, 32}, {1, 524288, 256}, {1, 4194304, 64}, {1, 1048576, 64}, {1, 3000000, 40},
      {1, 200, 65536}, {1, 37, 262144}, {40, 6, 65536}, {64, 131072, 8}, {64, 524288, 4},
      {8, 4096, 4096}, {1, 65536, 4096}};
  for (const auto& s : shapes) mid(s[0], s[1], s[2]);
  nhwc(64, 256, 3136);
  nhwc(64, 512, 4096);
  nhwc(32, 512, 784);
  nhwc(64, 64, 12544);
  nhwc(128, 64, 12544);
  nhwc(32, 128, 3136);
  nhwc(256, 64, 3136);
}
