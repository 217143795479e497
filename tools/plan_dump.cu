// plan_dump.cu: prints the canonical planner's decision (every field of CanonLaunch) for many
// random geometries, so that a refactoring of plan_canon can be checked without a GPU: build it
// against the tree before and after the change and diff the outputs (tools/plan_dump.sh).
//
// The CUDA runtime's occupancy and cluster queries are replaced by fixed answers (argv;
// plan_dump_stubs.cpp), so the output is a function of the planner's code alone: run it for
// several answers to reach the routes that depend on them. Overrides (the tests' forced
// launches) are drawn too.
//
//   plan_dump <seed> <cases> <blocks per SM> <largest cluster>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

// The planner under test and its op functors, by path (tools/plan_dump.sh sets them).
#include TREDUCE_PLAN_HEADER
#include TREDUCE_OPS_HEADER

// The runtime's answers, set from argv; plan_dump_stubs.cpp answers the planner's queries with
// them.
extern "C" int plan_dump_blocks_per_sm;
extern "C" int plan_dump_max_cluster;

namespace {
using treduce::CanonLaunch;
using treduce::CanonOverride;
using treduce::Geometry;

std::mt19937_64 rng;
int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// A size: mostly small or a power of two (times a small factor), sometimes anything.
int64_t draw_size() {
  switch (pick(0, 4)) {
    case 0:
      return pick(1, 9);
    case 1:
      return int64_t(1) << pick(0, 20);
    case 2:
      return (int64_t(1) << pick(0, 14)) * pick(1, 7);
    case 3:
      return pick(1, 300);
    default:
      return pick(1, 1 << 18);
  }
}

// A random strided view and a reduction over some of its dims, in the plan's canonical form:
// size-1 dims dropped, each side ordered by input stride (outermost first), contiguous dims merged.
Geometry draw_geometry() {
  const int nd = static_cast<int>(pick(1, 4));
  int64_t size[4], stride[4];
  int64_t numel = 1;
  for (int d = 0; d < nd; ++d) size[d] = draw_size();
  for (int d = 0; d < nd; ++d) numel *= size[d];
  while (numel > (int64_t(1) << 31)) {  // keep the element count plausible
    for (int d = 0; d < nd; ++d) size[d] = std::max<int64_t>(1, size[d] / 2);
    numel = 1;
    for (int d = 0; d < nd; ++d) numel *= size[d];
  }
  int perm[4] = {0, 1, 2, 3};
  if (pick(0, 2) == 0) std::shuffle(perm, perm + nd, rng);  // a transposed or permuted view
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; --i) {  // memory order: perm[nd - 1] innermost
    stride[perm[i]] = s;
    s *= size[perm[i]];
  }
  for (int d = 0; d < nd; ++d)
    if (pick(0, 5) == 0) stride[d] *= pick(2, 3);  // a step slice
  if (pick(0, 9) == 0) stride[static_cast<int>(pick(0, nd - 1))] = 0;  // an expanded dim
  bool reduced[4] = {};
  int nred = 0;
  for (int d = 0; d < nd; ++d) nred += reduced[d] = pick(0, 1) == 1;
  if (nred == 0) reduced[pick(0, nd - 1)] = true;
  int64_t out_stride[4], os = 1;
  for (int d = nd - 1; d >= 0; --d)
    if (!reduced[d]) {
      out_stride[d] = os;
      os *= size[d];
    }
  Geometry g;
  auto add = [&](treduce::IndexMap& m, bool red) {
    int idx[4], n = 0;
    for (int d = 0; d < nd; ++d)
      if (reduced[d] == red && size[d] > 1) idx[n++] = d;
    std::sort(idx, idx + n, [&](int a, int b) { return stride[a] > stride[b]; });
    m.ndim = 0;
    for (int i = 0; i < n; ++i) {
      const int d = idx[i];
      if (m.ndim > 0 && m.in_strides[m.ndim - 1] == stride[d] * size[d] &&
          (red || m.out_strides[m.ndim - 1] == out_stride[d] * size[d])) {
        m.sizes[m.ndim - 1] *= size[d];
        m.in_strides[m.ndim - 1] = stride[d];
        if (!red) m.out_strides[m.ndim - 1] = out_stride[d];
        continue;
      }
      m.sizes[m.ndim] = size[d];
      m.in_strides[m.ndim] = stride[d];
      m.out_strides[m.ndim] = red ? 0 : out_stride[d];
      ++m.ndim;
    }
  };
  add(g.kept, false);
  add(g.red, true);
  if (g.red.ndim == 0) {  // every reduced dim had size 1
    g.red.ndim = 1;
    g.red.sizes[0] = 1;
    g.red.in_strides[0] = 1;
  }
  g.num_outputs = 1;
  for (int d = 0; d < g.kept.ndim; ++d) g.num_outputs *= g.kept.sizes[d];
  g.reduce_len = 1;
  for (int d = 0; d < g.red.ndim; ++d) g.reduce_len *= g.red.sizes[d];
  return g;
}

CanonOverride draw_override() {
  CanonOverride ov;
  if (pick(0, 3) != 0) return ov;  // mostly the automatic plan
  const auto maybe = [&](int& field, std::initializer_list<int> values) {
    if (pick(0, 3) == 0) field = *(values.begin() + pick(0, int64_t(values.size()) - 1));
  };
  maybe(ov.y, {1, 2, 4, 16, 32, 64, 256});
  maybe(ov.splits, {1, 3, 4, 64});
  maybe(ov.rounds, {1, 2, 4});
  maybe(ov.per, {1, 2});
  maybe(ov.lat, {0, 1});
  maybe(ov.small, {0, 1});
  maybe(ov.threads, {64, 128, 256});
  maybe(ov.loop, {1, 2, 4});
  maybe(ov.cluster, {0, 1});
  maybe(ov.whole, {0, 1});
  return ov;
}

void print(const char* type, int64_t i, const Geometry& g, uintptr_t base, const CanonOverride& ov,
           const CanonLaunch& lc) {
  const treduce::CanonConfig& c = lc.cfg;
  std::printf("%s %lld M=%lld K=%lld base=%llu ov=%d,%d,%d,%d,%d,%d,%d,%d,%d,%d | ", type,
              (long long)i, (long long)g.num_outputs, (long long)g.reduce_len,
              (unsigned long long)(base & 15), ov.y, ov.splits, ov.rounds, ov.per, ov.lat,
              ov.small, ov.threads, ov.loop, ov.cluster, ov.whole);
  std::printf("X=%d Y=%d L=%lld per=%d R=%lld T=%lld S=%d rps=%lld merge=%d step=%d one=", c.X,
              c.Y, (long long)c.leaves, c.per, (long long)c.rounds, (long long)c.tiles, c.splits,
              (long long)c.rounds_per_split, c.merge_per_thread, c.step);
  for (int d = 0; d < treduce::kMaxDims; ++d) std::printf("%lld,", (long long)c.one.d[d]);
  std::printf(
      " pair=%d packed=%d pv=%lld vec=%d lat=%d small=%d chunk=%lld cluster=%d whole=%d "
      "stage=%d inter=%d grid=%u,%u,%u block=%u,%u,%u partials=%lld counters=%lld ok=%d\n",
      lc.pair, lc.packed, (long long)lc.packed_vecs, lc.vec, lc.lat, lc.small,
      (long long)lc.chunk, lc.cluster, lc.whole, lc.stage, lc.inter, lc.grid.x, lc.grid.y,
      lc.grid.z, lc.block.x, lc.block.y, lc.block.z, (long long)lc.partials,
      (long long)lc.counters, lc.ok);
}

template <class Op, class in_t, class out_t>
void run(const char* type, int64_t i, const Geometry& g, const CanonOverride& ov, int sms) {
  const uintptr_t base = 0x10000000 + uintptr_t(pick(0, 3) == 0 ? pick(1, 7) : 0) * sizeof(in_t);
  const in_t* in = reinterpret_cast<const in_t*>(base);
  const CanonLaunch lc = treduce::plan_canon<Op, in_t, out_t>(g, in, sms, ov, plan_dump_max_cluster > 1);
  print(type, i, g, base, ov, lc);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: plan_dump <seed> <cases> <blocks per SM> <largest cluster>\n");
    return 2;
  }
  rng.seed(std::strtoull(argv[1], nullptr, 10));
  const int64_t cases = std::strtoll(argv[2], nullptr, 10);
  plan_dump_blocks_per_sm = std::atoi(argv[3]);
  plan_dump_max_cluster = std::atoi(argv[4]);
  const int sms = 132;
  for (int64_t i = 0; i < cases; ++i) {
    const Geometry g = draw_geometry();
    const CanonOverride ov = draw_override();
    switch (pick(0, 5)) {
      case 0:
        run<treduce::CanonSumOp<float>, float, float>("f32", i, g, ov, sms);
        break;
      case 1:
        run<treduce::CanonSumOp<float>, __nv_bfloat16, __nv_bfloat16>("bf16", i, g, ov, sms);
        break;
      case 2:
        run<treduce::CanonSumOp<float>, __half, __half>("f16", i, g, ov, sms);
        break;
      case 3:
        run<treduce::CanonSumOp<double>, double, double>("f64", i, g, ov, sms);
        break;
      case 4:
        run<treduce::CanonSumOp<float>, __nv_fp8_e4m3, float>("fp8", i, g, ov, sms);
        break;
      default:
        run<treduce::CanonProdOp<float>, float, float>("prod", i, g, ov, sms);
        break;
    }
  }
  return 0;
}
