// Mid dims (A, B, C) over B at one output per thread (bench/NOTES.md step 127): variants built as
// separate executables against copies of csrc; L2 flushed (256 MB memset) before each timed
// launch, as do_bench; median of N launches. Prints, per case, µs and the result's bits (the
// canonical sums must not change), and the plan (vec, X, step, splits, grid).
// Build: nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O3 -Icsrc -o interleaved \
//   bench/harness/interleaved.cu (against a copy of csrc per variant); run: ./interleaved TAG [N].
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

// (A, B, C) contiguous, reduced over B; nchw: over A and C (NCHW statistics, C = H W).
static Geometry geom(int64_t A, int64_t B, int64_t C, bool nchw = false) {
  if (nchw) return nchw_geometry(A, B, C);
  Geometry g;
  g.num_outputs = A * C; g.reduce_len = B;
  g.kept.ndim = 2; g.kept.sizes[0] = A; g.kept.sizes[1] = C;
  g.kept.in_strides[0] = B * C; g.kept.in_strides[1] = 1;
  g.kept.out_strides[0] = C; g.kept.out_strides[1] = 1;
  g.red.ndim = 1; g.red.sizes[0] = B; g.red.in_strides[0] = C;
  return g;
}
// The plan's interleaved flag (step 127), -1 for sources without it.
template <class L>
auto inter_of(const L& l, int) -> decltype(int(l.inter)) { return int(l.inter); }
template <class L>
int inter_of(const L&, long) { return -1; }

int main(int argc, char** argv) {
  const char* tag = argc > 1 ? argv[1] : "?";
  const int N = argc > 2 ? atoi(argv[2]) : 50;
  const int sms = sm_count();
  const int64_t maxbytes = int64_t(1) << 28;
  Buffers b(maxbytes);
  std::vector<char> hout(1 << 22);
  // dt: 0 float32, 1 bfloat16, 2 float64
  struct Case { const char* name; int dt; int64_t A, B, C; bool plain; bool nchw = false; int lat = -1; int y = 0; };
  Case cases[] = {
      {"f32 (8,65536,4)", 0, 8, 65536, 4, false},
      {"f32 (8,65536,4) plain", 0, 8, 65536, 4, true},
      {"f32 (64,4096,8)", 0, 64, 4096, 8, false},
      {"f32 (64,4096,8) plain", 0, 64, 4096, 8, true},
      {"f32 (64,4096,8) lat=0", 0, 64, 4096, 8, false, false, 0},
      {"f32 (16,16384,16)", 0, 16, 16384, 16, false},
      {"f32 (4,32768,32)", 0, 4, 32768, 32, false},
      {"f32 (32,65536,4)", 0, 32, 65536, 4, false},
      {"f32 (64,131072,8)", 0, 64, 131072, 8, false},
      {"bf16 (8,65536,4)", 1, 8, 65536, 4, false},
      {"bf16 (64,4096,8)", 1, 64, 4096, 8, false},
      {"bf16 (64,4096,8) lat=0", 1, 64, 4096, 8, false, false, 0},
      {"bf16 (16,16384,16)", 1, 16, 16384, 16, false},
      {"f64 (8,65536,4)", 2, 8, 65536, 4, false},
      {"f64 (64,4096,8)", 2, 64, 4096, 8, false},
      {"f32 (1024,1024,2)", 0, 1024, 1024, 2, false},
      {"f32 (64,4096,1024)/4", 0, 16, 4096, 1024, false},
      {"f32 NCHW (64,256,3136)", 0, 64, 256, 3136, false, true},
      {"bf16 NCHW (64,256,3136)", 1, 64, 256, 3136, false, true},
      {"f32 NCHW y=128", 0, 64, 256, 3136, false, true, -1, 128},
      {"f32 NCHW y=64", 0, 64, 256, 3136, false, true, -1, 64},
      {"f32 NCHW y=32", 0, 64, 256, 3136, false, true, -1, 32},
      {"f32 NCHW y=16", 0, 64, 256, 3136, false, true, -1, 16},
      {"f32 NCHW y=8", 0, 64, 256, 3136, false, true, -1, 8},
      {"bf16 NCHW y=64", 1, 64, 256, 3136, false, true, -1, 64},
      {"bf16 NCHW y=8", 1, 64, 256, 3136, false, true, -1, 8},
  };
  int lastdt = -1;
  for (auto& cs : cases) {
    if (cs.dt != lastdt) {
      if (cs.dt == 0) fill<<<1024, 256, 0, b.st>>>(static_cast<float*>(b.in), maxbytes / 4, 7u);
      else if (cs.dt == 1) fill<<<1024, 256, 0, b.st>>>(static_cast<__nv_bfloat16*>(b.in), maxbytes / 2, 7u);
      else fill<<<1024, 256, 0, b.st>>>(static_cast<double*>(b.in), maxbytes / 8, 7u);
      lastdt = cs.dt;
    }
    const int es = cs.dt == 0 ? 4 : cs.dt == 1 ? 2 : 8;
    Geometry g = launch_geometry(geom(cs.A, cs.B, cs.C, cs.nchw), es);
    const int64_t M = cs.nchw ? cs.B : cs.A * cs.C;
    char plan[160] = "";
    auto run = [&](auto* in) {
      using in_t = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
      using out_t = std::conditional_t<sizeof(in_t) == 8, double, float>;
      if (cs.plain) {
        Launch pl = plan_launch<SumOp<out_t>, in_t, out_t>(g, in, sms);
        run_launch<SumOp<out_t>, in_t, out_t>(pl, g, in, static_cast<out_t*>(b.out),
                                              static_cast<out_t*>(b.part), b.cnt, b.st);
      } else {
        CanonOverride ov{};
        ov.lat = cs.lat;
        ov.y = cs.y;
        CanonLaunch lc = plan_canon<CanonSumOp<out_t>, in_t, out_t>(g, in, sms, ov, true);
        snprintf(plan, sizeof plan, "vec=%d X=%d step=%d splits=%d rps=%d grid=%ux%u lat=%d inter=%d", lc.vec,
                 lc.cfg.X, lc.cfg.step, lc.cfg.splits, int(lc.cfg.rounds_per_split), lc.grid.x, lc.grid.y, int(lc.lat), inter_of(lc, 0));
        run_canon_launch<CanonSumOp<out_t>, in_t, out_t>(lc, g, in, static_cast<out_t*>(b.out),
                                                        static_cast<typename CanonSumOp<out_t>::acc_t*>(b.part), b.cnt, b.st);
      }
    };
    auto go = [&] {
      if (cs.dt == 0) run(static_cast<const float*>(b.in));
      else if (cs.dt == 1) run(static_cast<const __nv_bfloat16*>(b.in));
      else run(static_cast<const double*>(b.in));
    };
    const double us = time_flushed(go, N, b.flush, b.st);
    const int64_t ob = M * (cs.dt == 2 ? 8 : 4);
    CK(cudaMemcpy(hout.data(), b.out, ob, cudaMemcpyDeviceToHost));
    unsigned h = 0; for (int64_t i = 0; i < ob; i += 4) { unsigned b; memcpy(&b, &hout[i], 4); h = h * 31 + b; }
    printf("RES %s|%s|%.2f|%08x|%s\n", tag, cs.name, us, h, plan);
  }
  return 0;
}
