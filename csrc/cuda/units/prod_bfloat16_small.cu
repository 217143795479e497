// The small-output kernels of prod for bfloat16 inputs (run_small), apart from the rest of
// prod_bfloat16.cu so that the two compile side by side: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template TREDUCE_RUN_SMALL(CanonProdOp<float>, __nv_bfloat16, __nv_bfloat16);

}  // namespace treduce
