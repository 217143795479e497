"""The L2 load policy after a write that leaves L2 dirty (NOTES step 49).

A read-only stream kernel (16-byte loads, the bench's ceiling kernel) with five load flavours,
timed after a 256 MB write (triton's do_bench flush: L2 full of dirty lines) and after a 256 MB
read (L2 clean), medians of 100 launches:

    python bench/l2_policy.py [--sizes-mb 64 1024]

plain loads, ld.global.cs, and ld.global.nc.L2::cache_hint with an evict_first, evict_normal or
evict_unchanged policy (createpolicy). Needs CuPy.
"""
import argparse

import cupy
import torch

SRC = r"""
template <int kMode>
__device__ __forceinline__ float4 ld(const float4* p, unsigned long long pol) {
  if (kMode == 0) return *p;
  if (kMode == 1) return __ldcs(p);
  float4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(pol));
  return v;
}
template <int kMode>
__device__ void body(const float4* __restrict__ p, long long n, float* out) {
  unsigned long long pol = 0;
  if (kMode == 2) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  if (kMode == 3) asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(pol));
  if (kMode == 4) asm volatile("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(pol));
  float acc = 0.f;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (; i + 3 * step < n; i += 4 * step) {
    float4 a = ld<kMode>(p + i, pol), b = ld<kMode>(p + i + step, pol);
    float4 c = ld<kMode>(p + i + 2 * step, pol), d = ld<kMode>(p + i + 3 * step, pol);
    acc += a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
  }
  for (; i < n; i += step) { float4 a = ld<kMode>(p + i, pol); acc += a.x + a.y + a.z + a.w; }
  if (acc == 1.2345e-30f) out[0] = acc;  // keeps the loads alive, never true on random data
}
extern "C" __global__ void k0(const float4* p, long long n, float* o) { body<0>(p, n, o); }
extern "C" __global__ void k1(const float4* p, long long n, float* o) { body<1>(p, n, o); }
extern "C" __global__ void k2(const float4* p, long long n, float* o) { body<2>(p, n, o); }
extern "C" __global__ void k3(const float4* p, long long n, float* o) { body<3>(p, n, o); }
extern "C" __global__ void k4(const float4* p, long long n, float* o) { body<4>(p, n, o); }
"""
NAMES = ["plain", "ld.cs", "evict_first", "evict_normal", "evict_unchanged"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mb", type=int, nargs="+", default=[64, 128, 256, 1024])
    args = ap.parse_args()
    mod = cupy.RawModule(code=SRC, options=("-std=c++17",))
    kernels = [mod.get_function(f"k{i}") for i in range(len(NAMES))]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = cupy.zeros(1, dtype=cupy.float32)
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    cache_f = cupy.from_dlpack(cache.view(torch.float32))

    def flush(dirty):
        if dirty:
            cache.zero_()
        else:
            kernels[0]((sms * 8,), (256,), (cache_f, cupy.int64(cache.numel() // 16), out))

    def timed(fn, dirty, reps=100):
        for _ in range(10):
            fn()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
        for start, end in ev:
            flush(dirty)
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        t = sorted(s.elapsed_time(e) * 1e3 for s, e in ev)
        return t[len(t) // 2]

    print(f"{'MB':>5} {'flush':>6} " + " ".join(f"{n:>16}" for n in NAMES) + "   (µs)")
    for mb in args.sizes_mb:
        x = torch.randn(mb << 18, device="cuda")
        cx, n = cupy.from_dlpack(x), x.numel() // 4
        for dirty in (True, False):
            row = [timed(lambda k=k: k((sms * 8,), (256,), (cx, cupy.int64(n), out)), dirty)
                   for k in kernels]
            print(f"{mb:5d} {'write' if dirty else 'read':>6} " + " ".join(f"{t:16.2f}" for t in row))
        del x


if __name__ == "__main__":
    main()
