// The standalone harnesses' common pieces (bench/harness/*.cu, built with nvcc against a copy of
// csrc; bench/NOTES.md): the error check, a deterministic fill, and do_bench's timing by hand.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "geometry.h"  // (-Icsrc)

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

// NCHW statistics: (N, C, HW) contiguous, reduced over N and HW: C outputs of N runs of HW
// elements.
inline treduce::Geometry nchw_geometry(int64_t N, int64_t C, int64_t HW) {
  treduce::Geometry g;
  g.num_outputs = C; g.reduce_len = N * HW;
  g.kept.ndim = 1; g.kept.sizes[0] = C; g.kept.in_strides[0] = HW; g.kept.out_strides[0] = 1;
  g.red.ndim = 2; g.red.sizes[0] = N; g.red.sizes[1] = HW;
  g.red.in_strides[0] = C * HW; g.red.in_strides[1] = 1;
  return g;
}

// p[i] = a hash of i and seed in [-1, 1), converted to T.
template <class T>
__global__ void fill(T* p, int64_t n, unsigned seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = T(float(h & 0xffffff) / float(1 << 24) * 2.f - 1.f);
  }
}

// The device buffers a harness launches with: the input, outputs (4 MB), split partials (64
// MB), zeroed arrival counters, the 256 MB flush buffer and a stream.
struct Buffers {
  void* in = nullptr;
  void* out = nullptr;
  void* part = nullptr;
  unsigned* cnt = nullptr;
  char* flush = nullptr;
  cudaStream_t st = nullptr;
  explicit Buffers(int64_t in_bytes) {
    CK(cudaMalloc(&in, in_bytes));
    CK(cudaMalloc(&out, 4 << 20));
    CK(cudaMalloc(&part, 64 << 20));
    CK(cudaMalloc(&cnt, 1 << 20)); CK(cudaMemset(cnt, 0, 1 << 20));
    CK(cudaMalloc(&flush, 256 << 20));
    CK(cudaStreamCreate(&st));
  }
};

inline int sm_count() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms;
}

inline double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// The median over n launches of go() on `st`, µs event to event, each after a 256 MB memset of
// `flush` (the L2 dirtied and flushed, as triton's do_bench does), after `warm` untimed ones.
template <class Go>
double time_flushed(Go&& go, int n, char* flush, cudaStream_t st, int warm = 5) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = 0; i < warm; ++i) go();
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    CK(cudaMemsetAsync(flush, i, 256 << 20, st));
    CK(cudaEventRecord(e0, st));
    go();
    CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
    float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms * 1000);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  return med(t);
}
