// Misaligned 16-bit sums (bench/NOTES.md steps 122 and 124): variants built as separate
// executables against copies of csrc; L2 flushed (256 MB memset) before each timed launch, as
// do_bench; median of N launches. Prints, per case, µs and the result's bits. The cases are
// step 124's (step 122's were the chunk cells of its tables, with CanonOverride forcing them).
// Build: nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O3 -Icsrc -o misaligned16 \
//   bench/harness/misaligned16.cu (against a copy of csrc per variant); run: ./misaligned16 TAG [N].
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cstdlib>
#include "cuda/kernels/launch.cuh"
#include "harness.cuh"
using namespace treduce;


static Geometry geom(int64_t M, int64_t K) {
  Geometry g;
  g.num_outputs = M; g.reduce_len = K;
  g.kept.ndim = M > 1 ? 1 : 0; g.kept.sizes[0] = M; g.kept.in_strides[0] = K; g.kept.out_strides[0] = 1;
  g.red.ndim = 1; g.red.sizes[0] = K; g.red.in_strides[0] = 1;
  return g;
}

int main(int argc, char** argv) {
  const char* tag = argc > 1 ? argv[1] : "?";
  const int N = argc > 2 ? atoi(argv[2]) : 50;
  const int sms = sm_count();
  const int64_t maxn = (int64_t(1) << 29) + 64;
  Buffers b(maxn * 2);
  float* const out = static_cast<float*>(b.out);
  double* const part = static_cast<double*>(b.part);
  std::vector<float> hout(65536);
  struct Case { const char* name; int dt; int64_t M, K, off; CanonOverride ov; bool plain; };
  CanonOverride dflt{};
  CanonOverride per2{}; per2.small = 1; per2.per = 2; per2.loop = 1;
  CanonOverride p1{}; p1.small = 1; p1.per = 1;
  CanonOverride p1l1{}; p1l1.small = 1; p1l1.per = 1; p1l1.loop = 1;
  CanonOverride p1l2{}; p1l2.small = 1; p1l2.per = 1; p1l2.loop = 2;
  Case cases[] = {
      {"bf16 rows (16384,16384)+1", 0, 16384, 16384, 1, dflt, false},
      {"bf16 rows (16384,16384)", 0, 16384, 16384, 0, dflt, false},
      {"bf16 rows (16384,16384)+1 plain", 0, 16384, 16384, 1, dflt, true},
      {"bf16 rows (65536,4096)+1", 0, 65536, 4096, 1, dflt, false},
      {"bf16 rows (65536,4096)", 0, 65536, 4096, 0, dflt, false},
      {"bf16 rows (8192,32768)+1", 0, 8192, 32768, 1, dflt, false},
      {"bf16 rows (8192,32768)", 0, 8192, 32768, 0, dflt, false},
      {"f16 rows (16384,16384)+1", 1, 16384, 16384, 1, dflt, false},
      {"f16 rows (16384,16384)", 1, 16384, 16384, 0, dflt, false},
      {"bf16 x[1:] 2^28", 0, 1, 1 << 28, 1, dflt, false},
  };
  int lastdt = -1;
  for (auto& cs : cases) {
    if (cs.dt != lastdt) {
      if (cs.dt == 0) fill<<<1024, 256, 0, b.st>>>(static_cast<__nv_bfloat16*>(b.in), maxn, 7u);
      else fill<<<1024, 256, 0, b.st>>>(static_cast<__half*>(b.in), maxn, 7u);
      lastdt = cs.dt;
    }
    Geometry g = launch_geometry(geom(cs.M, cs.K), 2);
    auto run = [&](auto* in) {
      using in_t = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
      if (cs.plain) {
        Launch pl = plan_launch<SumOp<float>, in_t, float>(g, in, sms);
        run_launch<SumOp<float>, in_t, float>(pl, g, in, out, reinterpret_cast<float*>(part), b.cnt, b.st);
      } else {
        CanonLaunch lc = plan_canon<WideSumOp<float>, in_t, float>(g, in, sms, cs.ov, true);
        run_canon_launch<WideSumOp<float>, in_t, float>(lc, g, in, out, part, b.cnt, b.st);
      }
    };
    auto go = [&] {
      if (cs.dt == 0) run(static_cast<const __nv_bfloat16*>(b.in) + cs.off);
      else run(static_cast<const __half*>(b.in) + cs.off);
    };
    const double us = time_flushed(go, N, b.flush, b.st);
    CK(cudaMemcpy(hout.data(), out, cs.M * 4, cudaMemcpyDeviceToHost));
    unsigned h = 0; for (int64_t i = 0; i < cs.M; ++i) { unsigned b; memcpy(&b, &hout[i], 4); h = h * 31 + b; }
    printf("RES %s|%s|%.2f|%08x\n", tag, cs.name, us, h);
  }
  return 0;
}
