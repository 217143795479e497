// geometry.h's walkers on the host (tests/test_walkers.py): TwoDimWalker, which rows_kernel's
// runs of vectors use, must give the offsets that Walker gives for the same map, start and step.
#include <cstdint>

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
