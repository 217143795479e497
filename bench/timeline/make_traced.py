"""A copy of csrc with %globaltimer marks in canon_kernel (thread 0 of each block records mark n
in g_trace[block * 8 + n]), for timeline.cu (bench/NOTES.md step 64). The marks go in at
anchors in canon.cuh; an anchor that moved fails an assertion.

    python3 bench/timeline/make_traced.py csrc build/timeline/src
"""
import os
import shutil
import sys

src, dst = sys.argv[1], sys.argv[2]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
p = os.path.join(dst, "cuda/kernels/canon.cuh")
s = open(p).read()
hook = '''
__device__ unsigned long long* g_trace;
#define TR_MARK(n) do { if (threadIdx.x == 0) { unsigned long long t_; \\
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_)); \\
  g_trace[(size_t(blockIdx.y) * gridDim.x + blockIdx.x) * 8 + (n)] = t_; } } while (0)
'''
s = s.replace("namespace treduce {\n", "namespace treduce {\n" + hook, 1)
def ins(anchor, text, after=True):
    global s
    assert s.count(anchor) == 1, anchor
    i = s.index(anchor)
    s = s[:i + len(anchor)] + text + s[i + len(anchor):] if after else s[:i] + text + s[i:]
ins("  const int64_t M = g.num_outputs, K = g.reduce_len;\n  const int last = g.red.ndim - 1;", "\n  TR_MARK(0);")
a_ = "      tree_over_y<Op, kVec>(a, X, Y, tid, sm);\n      if (ty == 0 && k1 - k0 > 1) {"
assert s.count(a_) == 1
s = s.replace(a_, "      TR_MARK(1);\n      tree_over_y<Op, kVec>(a, X, Y, tid, sm);\n      TR_MARK(2);\n      if (ty == 0 && k1 - k0 > 1) {")
ins("    const Merged<acc_t, kVec> m = merge_tile_splits<Op, kVec>(", "    TR_MARK(3);\n", after=False)
ins("  m.last = arrive_last(counter, splits, left);\n  if (!m.last) return m;", "\n  TR_MARK(4);")
ins("  int ym = 1;\n  while (ym < Y && ym * c < splits) ym <<= 1;", "  TR_MARK(5);\n", after=False)
ins("    if (m.last && ty == 0 && o0 < M) store(o0, m.a);", "\n    if (m.last) TR_MARK(6);")
# the latency kernel's cluster merge
ins("      if (cluster_rank() != 0) return;", "      TR_MARK(3);\n", after=False)
ins("  cluster_bar_wait(bar, 0);\n  acc_t a[1] = {node()};", "\n  TR_MARK(4);")  # merge_cluster_nodes
ins("          cfg.splits, X, tid, sm)};\n      const int64_t o0 = int64_t(blockIdx.x) * X + tx;\n      if (ty == 0 && o0 < M) store(o0, a);", "\n      TR_MARK(6);")
# canon_small_kernel and canon_small_loop_kernel (chunks; the loop kernel's marks 1-2 are its
# last chunk's): entry, the node's leaves folded and its block tree, the merge's arrival
ins("  const acc_t a =\n      canon_small_node<Op, in_t, kL, kUnaligned>(", "  TR_MARK(0);\n", after=False)
ins("  acc_t* const slots = partials + o * int64_t(chunks);\n", "  TR_MARK(0);\n")
ins("  tree_over_y<Op, 1>(a, 1, static_cast<int>(blockDim.x), tid, sm);\n  return a[0];",
    "  TR_MARK(1);\n", after=False)
ins("  TR_MARK(1);\n  tree_over_y<Op, 1>(a, 1, static_cast<int>(blockDim.x), tid, sm);\n",
    "  TR_MARK(2);\n")
ins("  const Merged<typename Op::acc_t, 1> m = merge_tile_splits<Op, 1>(", "  TR_MARK(3);\n",
    after=False)
ins("    out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(m.a[0], g.reduce_len, g.num_outputs));",
    "\n  if (m.last) TR_MARK(6);")
# ... and the chunks merged in a cluster (kCluster): before the cluster's wait, the first
# block's nodes in (merge_cluster_nodes, above), the output stored
ins("    cluster_wait();  // every block of the cluster has started (every thread takes part)\n"
    "    if (blockIdx.x != 0) {", "    TR_MARK(3);\n", after=False)
ins("      out[g.kept.out_offset(o)] = from_acc<out_t>(Op::finalize(b, g.reduce_len, g.num_outputs));",
    "\n    TR_MARK(6);")
open(p, "w").write(s)
print(dst, "marks:", s.count("TR_MARK(") - 1)
