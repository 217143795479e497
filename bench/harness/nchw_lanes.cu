// NCHW statistics (N, C, H, W) reduced over (0, 2, 3) with forced output lanes X (y = 256 / X)
// against the planner's default (bench/NOTES.md step 127's sweep, widened to more shapes for a
// rule): per case, µs (L2 flushed as do_bench, median of N), the result's bits (must not move),
// the plan, and split_makespan's estimate in rounds of 256 leaves per block slot (listed, as
// the column planner costs it) at the kernel's resident blocks. Build against a copy of csrc:
//   nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O3 -Icsrc -o nchw_lanes \
//     bench/harness/nchw_lanes.cu
// run: ./nchw_lanes TAG [N].
#include <cuda_bf16.h>
#include <cstdio>
#include <cstring>
#include <vector>
#include "cuda/kernels/launch.cuh"
#include "harness.cuh"
using namespace treduce;

int main(int argc, char** argv) {
  const char* tag = argc > 1 ? argv[1] : "?";
  const int reps = argc > 2 ? atoi(argv[2]) : 40;
  const int sms = sm_count();
  const int64_t maxbytes = int64_t(1) << 29;
  Buffers b(maxbytes);
  struct Shape { int64_t N, C, HW; };
  const Shape shapes[] = {{64, 256, 56 * 56}, {32, 512, 28 * 28}, {64, 64, 112 * 112},
                          {128, 128, 56 * 56}, {256, 64, 56 * 56}, {64, 256, 32 * 32}};
  std::vector<char> hout(1 << 20);
  for (int dt = 0; dt < 2; ++dt) {
    if (dt == 0) fill<<<1024, 256, 0, b.st>>>(static_cast<float*>(b.in), maxbytes / 4, 7u);
    else fill<<<1024, 256, 0, b.st>>>(static_cast<__nv_bfloat16*>(b.in), maxbytes / 2, 7u);
    for (const Shape& sh : shapes) {
      for (int X : {0, 1, 2, 4, 8, 16, 32}) {  // 0: the planner's default
        const int es = dt == 0 ? 4 : 2;
        if (sh.N * sh.C * sh.HW * es > maxbytes) continue;
        const Geometry g = launch_geometry(nchw_geometry(sh.N, sh.C, sh.HW), es);
        CanonOverride ov{};
        if (X > 0) ov.y = kCanonThreads / X;
        char plan[200] = "";
        auto run = [&](auto* in) {
          using in_t = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
          using Op = CanonSumOp<float>;
          const CanonLaunch lc = plan_canon<Op, in_t, float>(g, in, sms, ov, true);
          const int bps = canon_blocks_per_sm<Op, in_t, float>(lc.vec, lc.cfg.per);
          const int64_t span = lc.cfg.splits > 1
              ? split_makespan(lc.grid.x, lc.grid.y, lc.cfg.splits, lc.cfg.rounds_per_split,
                               int64_t(sms) * bps, true)
              : ceil_div(lc.grid.x, int64_t(sms) * bps) * ceil_div(lc.cfg.tiles, lc.grid.x) *
                    lc.cfg.rounds;
          snprintf(plan, sizeof plan, "X=%d per=%d splits=%d rps=%d grid=%ux%u bps=%d makespan=%lld",
                   lc.cfg.X, lc.cfg.per, lc.cfg.splits, int(lc.cfg.rounds_per_split), lc.grid.x,
                   lc.grid.y, bps, (long long)span);
          run_canon_launch<Op, in_t, float>(lc, g, in, static_cast<float*>(b.out),
                                            static_cast<Op::acc_t*>(b.part), b.cnt, b.st);
        };
        auto go = [&] {
          if (dt == 0) run(static_cast<const float*>(b.in));
          else run(static_cast<const __nv_bfloat16*>(b.in));
        };
        const double us = time_flushed(go, reps, b.flush, b.st);
        CK(cudaMemcpy(hout.data(), b.out, sh.C * 4, cudaMemcpyDeviceToHost));
        unsigned h = 0;
        for (int64_t i = 0; i < sh.C * 4; i += 4) { unsigned b; memcpy(&b, &hout[i], 4); h = h * 31 + b; }
        printf("RES %s|%s (%lld,%lld,%lld) X=%d|%.2f|%08x|%s\n", tag, dt == 0 ? "f32" : "bf16",
               (long long)sh.N, (long long)sh.C, (long long)sh.HW, X, us, h, plan);
      }
    }
  }
  return 0;
}
