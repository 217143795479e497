// call.cuh: one CUDA reduction as the kernel units see it, with nothing from ATen.
//
// The torch side (reduce_cuda.cu) turns a Plan into a CudaCall: pointers, dtypes, geometry, the
// device's figures, the stream, the forced launch configuration and a source of scratch. The
// kernel units (units/*.cu) instantiate every kernel, each unit the kernels of one op family for
// a few input dtypes. They include no ATen header, which would cost each unit about 20 s of
// compile on one core, so that many units build side by side on a many-core host and cost
// little on two cores.
#pragma once
#include <c10/core/ScalarType.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../geometry.h"
#include "../op_list.h"
#include "kernels/canon_config.cuh"
#include "kernels/launch_common.cuh"

namespace treduce {

// The forced configuration of the canonical kernels, set by the private op
// treduce::_force_launch(spec) (tests and the bench; reduce_cuda.cu), "" for the default plan:
// "y=Y,per=P,splits=S,rounds=R,lat=L,small=T" forces Y leaf lanes per block, P adjacent leaves
// per thread and round, S blocks per output tile, R rounds per split (each optional; a split is
// a node of the tree that one block computes), the latency kernel off (L = 0) or wherever the
// shape allows it (L = 1) and the one-block-per-output kernel off (T = 0) or wherever the
// layout allows it (T = 1); with small=1, "threads=N" and "loop=C" force its chunks' threads
// per block and (aligned float32 and 16-bit chunks of one leaf per thread) chunks per block,
// and "cluster=U" an output's chunks merged in a thread-block cluster (U = 1, where one block
// takes each and there are at most 8) or through global memory (U = 0); "whole=W" one block per
// output through canon_small_kernel's instantiation without the chunks' merge (W = 1) or with
// it (W = 0);
// "copy=C" a transposed reduced block read in place (C = 0) or copied into the canonical order
// first wherever the layout allows it (C = 1; reduce_cuda.cu: copies_transposed_block);
// "vec=0" the plain kernels' columns one output a thread where they would take 16-byte loads
// across neighbouring outputs (plan_plain.cuh's plan_launch; the other ops' kernels, too);
// "plain" sends floating sums and means to the plain kernels (float accumulators) instead (the
// bench's baseline). canon_mode() is the default plan unless a configuration is forced: one
// atomic load per call.
struct CanonMode {
  bool plain = false;
  int copy = -1;      // the transposed-block copy: -1 automatic, 0 never, 1 wherever allowed
  int vec_cols = -1;  // the plain column kernels' 16-byte variant: -1 automatic, 0 never
  CanonOverride force{};
};
CanonMode canon_mode();

// What a split launch needs besides the input and output: scratch for its accumulators and the
// stream's self-resetting counters (null pointers when it needs none).
struct Scratch {
  void* partials = nullptr;
  unsigned* counters = nullptr;
};

// Where a call's scratch comes from (reduce_cuda.cu: PyTorch's caching allocator and the stream's
// counter pool), held until the call returns. No host synchronisation and no cudaMalloc on the
// call's path, so that every op can be captured in a CUDA graph.
class ScratchSource {
 public:
  virtual Scratch take(int64_t bytes) = 0;

 protected:
  ~ScratchSource() = default;
};

struct CudaCall {
  OpKind kind;
  c10::ScalarType in_dtype, out_dtype;
  const void* in;  // the input that `geom` describes
  void* out;       // the contiguous result
  Geometry geom;   // M outputs x K >= 1 reduced elements over `in` (plan.h)
  cudaStream_t stream;
  int sms;        // the device's multiprocessor count
  bool clusters;  // thread-block clusters (compute capability 9.0 or later)
  CanonMode mode;
  ScratchSource* scratch;
};

// Each op family's kernels for input dtype In (a c10 storage type) and every result dtype the
// family has for it: defined in units/families.cuh, instantiated in the units. Each launches on
// call.stream and leaves the launch's error, if any, to cudaGetLastError().
template <class In>
void sum_kernels(const CudaCall& call);
template <class In>
void mean_kernels(const CudaCall& call);  // floating inputs
template <class In>
void prod_kernels(const CudaCall& call);
template <class In>
void extreme_kernels(const CudaCall& call);  // amax, amin
template <class In>
void arg_kernels(const CudaCall& call);  // argmax, argmin: every input dtype but bool
template <class In>
void bitwise_kernels(const CudaCall& call);  // bitwise_and/or/xor: integer and bool inputs

}  // namespace treduce
