// The latency tile kernels of prod for float16 inputs (run_lat_tiles and the planner's cluster
// queries), apart from the rest of prod_half.cu so that they compile side by side: one kernel
// unit (call.cuh).
#include "families.cuh"

namespace treduce {

TREDUCE_LAT_TILES_PART(template, CanonProdOp<float>, __half, __half);

}  // namespace treduce
