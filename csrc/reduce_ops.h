// reduce_ops.h: the combine operators, shared by the CPU and CUDA backends. Nothing from torch.
//
// An op works on its accumulator type `acc_t` only; the backends convert each loaded element to
// acc_t (exactly, for every op here) before `reduce`, and the finished accumulator to the output
// type after `finalize`. An op provides:
//
//   acc_t identity()                      the value that pads: combine(identity(), a) == a
//   acc_t reduce(acc_t acc, acc_t v)      fold one element into a running accumulator
//   acc_t combine(acc_t a, acc_t b)       merge two partial results; `a` covers earlier elements
//   acc_t finalize(acc_t a)               the value to store (before conversion to the output type)
//
// Later ops (mean, prod, argmax, bitwise) add functors here; the kernels do not change.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "geometry.h"  // TR_HD

namespace treduce {

template <class T>
TR_HD bool is_nan(T v) {
  return v != v;  // false for every integer type
}

template <class T>
struct SumOp {
  using acc_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() { return acc_t(0); }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return acc + v; }
  TR_HD static acc_t combine(acc_t a, acc_t b) { return a + b; }
  TR_HD static acc_t finalize(acc_t a) { return a; }
};

// Max with NaN propagation: once a NaN is seen it wins, as in torch.amax.
template <class T>
struct MaxOp {
  using acc_t = T;
  static constexpr bool kNeedsIndex = false;
  TR_HD static acc_t identity() {
    if constexpr (std::numeric_limits<T>::has_infinity)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  TR_HD static acc_t combine(acc_t a, acc_t b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b > a ? b : a;
  }
  TR_HD static acc_t reduce(acc_t acc, acc_t v) { return combine(acc, v); }
  TR_HD static acc_t finalize(acc_t a) { return a; }
};

}  // namespace treduce
