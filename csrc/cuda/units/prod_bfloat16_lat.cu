// The latency tile kernels of prod for bfloat16 inputs (run_lat_tiles and the planner's cluster
// queries), apart from the rest of prod_bfloat16.cu so that they compile side by side: one kernel
// unit (call.cuh).
#include "families.cuh"

namespace treduce {

TREDUCE_LAT_TILES_PART(template, CanonProdOp<float>, __nv_bfloat16, __nv_bfloat16);

}  // namespace treduce
