// The tile kernels of prod for float16 inputs but the latency ones (run_tiles and the planner's
// occupancy query), apart from the rest of prod_half.cu so that they compile side by side: one
// kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

TREDUCE_TILES_PART(template, CanonProdOp<float>, __half, __half);

}  // namespace treduce
