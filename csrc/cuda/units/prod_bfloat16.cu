// The kernels of prod for bfloat16 inputs but the small-output and tile ones
// (prod_bfloat16_small.cu, prod_bfloat16_tiles.cu, prod_bfloat16_lat.cu): one kernel unit
// (call.cuh).
#include "families.cuh"

namespace treduce {

TREDUCE_SMALL_PART(extern template, CanonProdOp<float>, __nv_bfloat16, __nv_bfloat16);
TREDUCE_TILES_PART(extern template, CanonProdOp<float>, __nv_bfloat16, __nv_bfloat16);
TREDUCE_LAT_TILES_PART(extern template, CanonProdOp<float>, __nv_bfloat16, __nv_bfloat16);
template void prod_kernels<c10::BFloat16>(const CudaCall&);

}  // namespace treduce
