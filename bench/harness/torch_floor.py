"""The torch path's extra eager time (bench/NOTES.md step 125). do_bench against manual loops with a
torch fill or a cudaMemsetAsync (cupy) flush; random against zero input; torch.cuda._sleep(0)
as a near-empty launch through torch."""
import os, statistics, torch, torch_reduce, cupy
import triton.testing as tt
x = torch.randn(1 << 16, device="cuda"); xz = torch.zeros(1 << 16, device="cuda")
cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
st = torch.cuda.current_stream().cuda_stream
def f_fill(): cache.zero_()
def f_memset(): cupy.cuda.runtime.memsetAsync(cache.data_ptr(), 0, 256 << 20, st)
def manual(fn, flush, n=300, sync=False):
    s = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    e = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for _ in range(20): fn()
    for i in range(n):
        flush(); s[i].record(); fn(); e[i].record()
        if sync: e[i].synchronize()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in zip(s, e))
def setspec(v):
    if v is None: os.environ.pop("TREDUCE_CANON_LAUNCH", None)
    else: os.environ["TREDUCE_CANON_LAUNCH"] = v
cases = [("sleep(0)", None, lambda: torch.cuda._sleep(0)),
         ("treduce 2^16", None, lambda: torch_reduce.sum(x)),
         ("treduce 2^16 zeros", None, lambda: torch_reduce.sum(xz)),
         ("plain 2^16", "plain", lambda: torch_reduce.sum(x)),
         ("torch.sum 2^16", None, lambda: torch.sum(x))]
print(f"{'case':22s} {'do_bench':>9s} {'fill':>7s} {'memset':>7s} {'fill+sync':>9s} {'memset+sync':>11s}")
for r in range(2):
    for name, spec, fn in cases:
        setspec(spec)
        d = tt.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3
        a = manual(fn, f_fill); b = manual(fn, f_memset)
        c = manual(fn, f_fill, sync=True); m = manual(fn, f_memset, sync=True)
        print(f"{name:22s} {d:9.2f} {a:7.2f} {b:7.2f} {c:9.2f} {m:11.2f}", flush=True)
    setspec(None)
