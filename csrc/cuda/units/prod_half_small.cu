// The small-output kernels of prod for float16 inputs (run_small), apart from the rest of
// prod_half.cu so that the two compile side by side: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template TREDUCE_RUN_SMALL(CanonProdOp<float>, __half, __half);

}  // namespace treduce
