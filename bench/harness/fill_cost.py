"""What a preceding 256 MB fill (do_bench's L2 flush, which leaves L2 dirty) costs a kernel, and what
static shared memory, a large kernel parameter and the shared-memory carveout cost a read stream
(bench/NOTES.md step 149). On the H200, with the library built (PYTHONPATH at the checkout):
  E1: columns (16384, 16384) d0 in CUDA graphs of 10 launches, eight alternating passes: torch.sum,
      the library, its plain kernel, and column_fold.py's loop with ORD 0 / 1 (the canonical leaf
      per thread, or interleaved rows) at 3 or 4 blocks per SM and 3 or 6 splits.
  E2: per op, graphs of 10 x [fill, op] minus 10 x [fill], against 10 x [op]: torch and the library
      on rows, strided and columns; cupy read kernels of 512 MB with 1 / 9 / 41 KB of static shared
      memory, a 1112-byte parameter (canon_kernel's), and the carveout forced to 100%.
Usage: python3 bench/harness/fill_cost.py OUT.json"""
import json, os, statistics as st, sys
import cupy as cp
import numpy as np
import torch
import triton.testing as tt
import torch_reduce  # noqa: F401
from graph_timing import graph_of, on_torch_stream, passes, time_graph, with_env

ops = torch.ops.treduce
res = {}
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "column_fold.py")).read()
SRC = src.split("SRC = r'''")[1].split("'''")[0]
SRC = SRC.replace("template <int MODE, int BAR, int POL, int LVL, int ORD>\n__global__ void __launch_bounds__(256, 3) colfold(",
                  "template <int MODE, int BAR, int POL, int LVL, int ORD, int MINB>\n__global__ void __launch_bounds__(256, MINB) colfold(")
assert "MINB) colfold" in SRC
SRC += r'''
template <int N> struct Pad { int b[N]; };
template <int SMEM, int PAD>
__global__ void __launch_bounds__(256, 3) rd(const float4* __restrict__ in, float* __restrict__ out,
                                              long long n4, Pad<PAD> pad) {
  __shared__ float sm[SMEM / 4];
  float a = pad.b[PAD - 1];
  const long long st = (long long)gridDim.x * 256;
  long long i = blockIdx.x * 256LL + threadIdx.x;
  for (; i + 7 * st < n4; i += 8 * st) {
    float4 x[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) x[u] = __ldg(in + i + u * st);
#pragma unroll
    for (int u = 0; u < 8; ++u) a += x[u].x + x[u].y + x[u].z + x[u].w;
  }
  for (; i < n4; i += st) { float4 x = __ldg(in + i); a += x.x + x.y + x.z + x.w; }
  sm[threadIdx.x % (SMEM / 4)] = a;
  __syncthreads();
  if (threadIdx.x == 0) { float s = 0; for (int k = 0; k < 256 && k < SMEM / 4; ++k) s += sm[k]; out[blockIdx.x] = s; }
}
'''
HV = {"H0 ord0 3/SM S3": ("0,2,1,0,0,3", 3), "H1 ord0 4/SM S4": ("0,2,1,0,0,4", 4),
      "H2 ord1 3/SM S3": ("0,2,1,0,1,3", 3), "H3 ord1 4/SM S4": ("0,2,1,0,1,4", 4),
      "H4 ord0 3/SM S6": ("0,2,1,0,0,3", 6), "H5 fadd ord1 nobar 3/SM S3": ("2,0,0,0,1,3", 3)}
RD = {"rd 1K": (1024, 1), "rd 9K": (9216, 1), "rd 41K": (41472, 1), "rd 1K pad1112": (1024, 278),
      "rd 41K pad1112": (41472, 278)}
names = sorted({f"colfold<{v[0]}>" for v in HV.values()}) + [f"rd<{s},{p}>" for s, p in RD.values()]
mod = cp.RawModule(code=SRC, options=("-std=c++17", "--gpu-architecture=sm_90"), name_expressions=names)


# E1: columns
R = C = 16384
x = torch.randn((R, C), device="cuda")
xc = cp.asarray(x)
cols4, leaves = C // 4, R // 64
tiles = cols4 // 32
hout = cp.empty((8, tiles, 256, 4), dtype=cp.float64)
e1 = {"torch": lambda: torch.sum(x, 0), "ours": lambda: ops.sum(x, [0]),
      "plain": with_env(lambda: ops.sum(x, [0]), "plain")}
for k, (v, splits) in HV.items():
    f = mod.get_function(f"colfold<{v}>")
    lps = ((leaves + splits - 1) // splits + 7) // 8 * 8
    sp = (leaves + lps - 1) // lps
    e1[k] = on_torch_stream(lambda f=f, sp=sp, lps=lps: f((tiles, sp), (256,), (xc, hout, np.int32(cols4), np.int32(leaves), np.int32(lps))))
print("E1 columns f32 (16384,16384) d0, graph of 10, µs per launch (8 passes)")
res["E1"] = passes(e1)

# E2: after a fill
cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
fill = lambda: cache.zero_()
xs = torch.randn((8192, 16384), device="cuda")
cells = {"rows (16384,16384) d1": (x, [1]), "strided (8192,16384)[:, ::2] d1": (xs[:, ::2], [1]),
         "columns (16384,16384) d0": (x, [0])}
e2 = {}
for cn, (t, d) in cells.items():
    e2[f"torch {cn}"] = (lambda t=t, d=d: torch.sum(t, d))
    e2[f"ours {cn}"] = (lambda t=t, d=d: ops.sum(t, d))
buf = torch.randn(1 << 27, device="cuda")  # 512 MB
bc = cp.asarray(buf)
rout = cp.empty(396, dtype=cp.float32)


def add_rd(k, f, p):
    """e2[k]: read kernel f over buf, with a p-int parameter, if one launch of it succeeds."""
    pad = np.zeros(1, dtype=np.dtype([("b", np.int32, (p,))]))[0]
    e2[k] = on_torch_stream(lambda: f((396,), (256,), (bc, rout, np.int64(buf.numel() // 4), pad)))
    try:
        e2[k](); torch.cuda.synchronize()
    except Exception as ex:  # noqa: BLE001
        print(k, "launch failed:", ex); del e2[k]


for k, (s, p) in RD.items():
    add_rd(k, mod.get_function(f"rd<{s},{p}>"), p)
# carveout forced to the largest shared memory on copies of two kernels
for k, (s, p) in (("rd 1K carve100", (1024, 1)), ("rd 41K carve100", (41472, 1))):
    m2 = cp.RawModule(code=SRC, options=("-std=c++17", "--gpu-architecture=sm_90"), name_expressions=[f"rd<{s},{p}>"])
    f = m2.get_function(f"rd<{s},{p}>")
    try:
        f.preferred_shared_memory_carveout = 100
        ok = "attr"
    except Exception as ex:  # noqa: BLE001
        ok = f"fail {ex}"
    print(k, "carveout:", ok)
    add_rd(k, f, p)
gfill = graph_of([fill])
out2 = {}
for p in range(3):
    tf = time_graph(gfill)
    for k, f in e2.items():
        ga, gb = graph_of([f]), graph_of([fill, f])
        alone, both = time_graph(ga), time_graph(gb)
        out2.setdefault(k, []).append((alone, both - tf, tf))
        del ga, gb
for k, f in e2.items():
    if not k.startswith("rd"):
        out2[k].append(("do_bench", tt.do_bench(f, warmup=25, rep=100, return_mode="median") * 1e3))
res["E2"] = out2
print("E2: µs per op: alone (graph of 10), after a 256 MB fill (graph of 10 x [fill, op] minus fill), extra; do_bench eager")
for k, v in out2.items():
    trip = [u for u in v if u[0] != "do_bench"]
    a = st.median(u[0] for u in trip); b = st.median(u[1] for u in trip)
    db = [u[1] for u in v if u[0] == "do_bench"]
    print(f"  {k:40s} alone {a:7.1f}  after fill {b:7.1f}  extra {b - a:5.1f}" + (f"  do_bench {db[0]:7.1f}" if db else ""))
print("fill alone", st.median(u[2] for u in next(iter(out2.values())) if u[0] != "do_bench"))
json.dump(res, open(sys.argv[1], "w"), indent=1)
