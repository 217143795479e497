// geometry.h's walkers on the host (tests/test_walkers.py): TwoDimWalker, which rows_kernel's
// runs of vectors use, must give the offsets that Walker gives for the same map, start and step;
// RunVectors, which splits rows_kernel's rows (contiguous or at stride 2) into head, vectors and
// tail, must give every index once.
#include <cstdint>
#include <vector>

#include "../csrc/geometry.h"

using namespace treduce;

// The steps (of n, from index r by `step`) at which TwoDimWalker's offset differs from Walker's
// over the two-dim map of `sizes` and input `strides`.
extern "C" int64_t two_dim_walk_errors(const int64_t* sizes, const int64_t* strides, int64_t r,
                                       int64_t step, int64_t n) {
  IndexMap m;
  m.ndim = 2;
  for (int d = 0; d < 2; ++d) {
    m.sizes[d] = sizes[d];
    m.in_strides[d] = strides[d];
  }
  const StepDigits s = step_digits(m, step);
  Walker w(m, r);
  TwoDimWalker t(m, r, s);
  int64_t errors = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t want = w.offset(m);
    if (t.next() != want || want != m.in_offset(r + i * step)) ++errors;
    w.advance(m, s);
  }
  return errors;
}

// RunVectors<kStep, V> over a run of K elements whose first lies `misalign` elements past a
// vector boundary: the indices that its head, its vectors (the run's elements of each, from
// first_r) and its tail give must cover 0 .. K - 1 once each, every vector inside the run's
// span, every element of a vector at its index's memory position. Returns the violations.
template <int kStep, int V>
int64_t run_vectors_errors(int64_t misalign, int64_t K) {
  const RunVectors<kStep, V> rv((V - misalign) % V, K);
  const int64_t span = (K - 1) * kStep + 1;
  std::vector<int> seen(static_cast<size_t>(K), 0);
  int64_t errors = 0;
  const auto mark = [&](int64_t r, int64_t pos) {
    if (r < 0 || r >= K || pos != r * kStep) {
      ++errors;
      return;
    }
    ++seen[static_cast<size_t>(r)];
  };
  if ((misalign + rv.head) % V != 0 && rv.head != span) ++errors;  // vectors start on a boundary
  for (int64_t r = 0; r < rv.head_end(); ++r) mark(r, r * kStep);
  if (rv.head_end() * kStep < rv.head) ++errors;  // an element of the head left out
  for (int64_t v = 0; v < rv.nvec; ++v) {
    const int64_t start = rv.head + v * V;  // the vector's memory positions start .. start + V - 1
    if (start + V > span) ++errors;
    for (int i = 0; i < V / kStep; ++i) mark(rv.first_r(v) + i, start + rv.p + i * kStep);
  }
  for (int64_t r = rv.tail_begin(); r < K; ++r) mark(r, r * kStep);
  for (int64_t r = 0; r < K; ++r) errors += seen[static_cast<size_t>(r)] != 1;
  return errors;
}

extern "C" int64_t run_vectors_check(int step, int V, int64_t misalign, int64_t K) {
  switch (step * 100 + V) {
    case 102:
      return run_vectors_errors<1, 2>(misalign, K);
    case 104:
      return run_vectors_errors<1, 4>(misalign, K);
    case 108:
      return run_vectors_errors<1, 8>(misalign, K);
    case 116:
      return run_vectors_errors<1, 16>(misalign, K);
    case 202:
      return run_vectors_errors<2, 2>(misalign, K);
    case 204:
      return run_vectors_errors<2, 4>(misalign, K);
    case 208:
      return run_vectors_errors<2, 8>(misalign, K);
    case 216:
      return run_vectors_errors<2, 16>(misalign, K);
    default:
      return -1;
  }
}
