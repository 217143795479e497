// Per-block timelines of the canonical float32 sums (bench/NOTES.md step 64; canon_small_kernel's
// chunks and the mid dims since step 108). Thread 0 of each
// block records %globaltimer at kernel entry (0), before (1) and after (2) the round's tree,
// before (3) and after (4) the arrival, after the merge's loads (5) and at the output store (6).
// Prints, per case, the launch shape, the time per launch back to back (and the plain kernel's),
// each mark's median and maximum over the blocks (medians of 30 launches, with and without a
// 256 MB write before each) and a hash of the result's bits. Built against the traced copy of
// csrc (make_traced.py); run.sh does both.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cstdlib>
#include "cuda/kernels/launch.cuh"
using namespace treduce;
using W = WideSumOp<float>;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

// M rows of K (C = 1), or mid dims (M / C, K, C) reduced over K.
static Geometry geom(int64_t M, int64_t K, int64_t C = 1) {
  Geometry g;
  g.num_outputs = M; g.reduce_len = K;
  if (C > 1) {
    g.kept.ndim = 2; g.kept.sizes[0] = M / C; g.kept.in_strides[0] = K * C; g.kept.out_strides[0] = C;
    g.kept.sizes[1] = C; g.kept.in_strides[1] = 1; g.kept.out_strides[1] = 1;
    g.red.ndim = 1; g.red.sizes[0] = K; g.red.in_strides[0] = C;
    return g;
  }
  g.kept.ndim = M > 1 ? 1 : 0; g.kept.sizes[0] = M; g.kept.in_strides[0] = K; g.kept.out_strides[0] = 1;
  g.red.ndim = 1; g.red.sizes[0] = K; g.red.in_strides[0] = 1;
  return g;
}

static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v.empty() ? 0 : v[v.size() / 2]; }

int main(int argc, char** argv) {
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int64_t maxn = int64_t(64) * 65536 * 4;
  std::vector<float> h(maxn);
  srand(1); for (auto& x : h) x = float(rand()) / RAND_MAX - 0.5f;
  float* in; CK(cudaMalloc(&in, maxn * 4)); CK(cudaMemcpy(in, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  float* out; CK(cudaMalloc(&out, 1 << 20));
  double* part; CK(cudaMalloc(&part, 64 << 20));
  unsigned* cnt; CK(cudaMalloc(&cnt, 1 << 20)); CK(cudaMemset(cnt, 0, 1 << 20));
  unsigned long long* tr; CK(cudaMalloc(&tr, 8 * 8 * 65536)); CK(cudaMemcpyToSymbol(g_trace, &tr, sizeof(tr)));
  char* flush; CK(cudaMalloc(&flush, 256 << 20));
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  struct Case { const char* name; int64_t M, K, C; } cases[] = {
      {"2^16", 1, 1 << 16, 1}, {"2^20", 1, 1 << 20, 1}, {"2^22", 1, 1 << 22, 1},
      {"(64,65536)", 64, 65536, 1}, {"(8,131072)", 8, 131072, 1},
      {"(1024,1024,2) d1", 2048, 1024, 2}, {"(8,65536,4) d1", 32, 65536, 4}};
  for (auto& cs : cases) {
    Geometry g = launch_geometry(geom(cs.M, cs.K, cs.C), 4);
    CanonLaunch lc = plan_canon<W, float, float>(g, in, sms, CanonOverride{}, true);
    const int blocks = lc.grid.x * lc.grid.y;
    // back-to-back time per launch (no flush), then traced launches with and without a flush
    for (int i = 0; i < 50; ++i) run_canon_launch<W, float, float>(lc, g, in, out, part, cnt, st);
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < 200; ++i) run_canon_launch<W, float, float>(lc, g, in, out, part, cnt, st);
    CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    // plain kernel, the same way
    Launch pl = plan_launch<SumOp<float>, float, float>(g, in, sms);
    for (int i = 0; i < 50; ++i) run_launch<SumOp<float>, float, float>(pl, g, in, out, reinterpret_cast<float*>(part), cnt, st);
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < 200; ++i) run_launch<SumOp<float>, float, float>(pl, g, in, out, reinterpret_cast<float*>(part), cnt, st);
    CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
    float pms; cudaEventElapsedTime(&pms, e0, e1);
    printf("\n%s: grid %u x %u, block %u, lat %d, small %d, chunk %lld, splits %d, rounds/split %lld, merge/thread %d; back-to-back %.2f us/launch (plain: grid %u x %u, %.2f)\n",
           cs.name, lc.grid.x, lc.grid.y, lc.block.x, int(lc.lat), int(lc.small), (long long)lc.chunk, lc.cfg.splits, (long long)lc.cfg.rounds_per_split,
           lc.cfg.merge_per_thread, ms * 1000 / 200, pl.grid.x, pl.grid.y, pms * 1000 / 200);
    for (int fl = 0; fl < 2; ++fl) {
      std::vector<std::vector<double>> ev(7), evmax(7), last(7);
      std::vector<double> span, evt;
      for (int it = 0; it < 30; ++it) {
        if (fl) CK(cudaMemsetAsync(flush, it, 256 << 20, st));
        CK(cudaMemsetAsync(tr, 0, size_t(blocks) * 64, st));
        CK(cudaEventRecord(e0, st));
        run_canon_launch<W, float, float>(lc, g, in, out, part, cnt, st);
        CK(cudaEventRecord(e1, st)); CK(cudaStreamSynchronize(st));
        float t; cudaEventElapsedTime(&t, e0, e1); evt.push_back(t * 1000);
        std::vector<unsigned long long> hb(size_t(blocks) * 8);
        CK(cudaMemcpy(hb.data(), tr, hb.size() * 8, cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull, tend = 0;
        for (int b = 0; b < blocks; ++b) if (hb[b * 8]) t0 = std::min(t0, hb[b * 8]);
        for (int e = 0; e < 7; ++e) {
          std::vector<double> v;
          for (int b = 0; b < blocks; ++b) if (hb[b * 8 + e]) v.push_back((hb[b * 8 + e] - t0) / 1000.0);
          if (!v.empty()) { ev[e].push_back(med(v)); evmax[e].push_back(*std::max_element(v.begin(), v.end())); }
          for (int b = 0; b < blocks; ++b) tend = std::max(tend, hb[b * 8 + e]);
        }
        span.push_back((tend - t0) / 1000.0);
      }
      printf("  %s: event %.2f us, first mark to last mark %.2f us; per mark (median over runs of the blocks' median / max), us after the first block's entry:\n",
             fl ? "after a 256 MB write" : "no flush", med(evt), med(span));
      const char* names[7] = {"entry", "leaves folded", "round tree done", "before arrival", "last block arrived", "merge loads done", "output stored"};
      for (int e = 0; e < 7; ++e)
        if (!ev[e].empty()) printf("    %-20s %7.2f / %7.2f  (%zu runs)\n", names[e], med(ev[e]), med(evmax[e]), ev[e].size());
    }
    std::vector<float> ho(cs.M);
    CK(cudaMemcpy(ho.data(), out, cs.M * 4, cudaMemcpyDeviceToHost));
    unsigned hsh = 0;
    for (float v : ho) { unsigned u; memcpy(&u, &v, 4); hsh = hsh * 31 + u; }
    printf("  result bits hash %08x\n", hsh);
  }
  return 0;
}
