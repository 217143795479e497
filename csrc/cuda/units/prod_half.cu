// The kernels of prod for float16 inputs but the small-output and tile ones
// (prod_half_small.cu, prod_half_tiles.cu, prod_half_lat.cu): one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

TREDUCE_SMALL_PART(extern template, CanonProdOp<float>, __half, __half);
TREDUCE_TILES_PART(extern template, CanonProdOp<float>, __half, __half);
TREDUCE_LAT_TILES_PART(extern template, CanonProdOp<float>, __half, __half);
template void prod_kernels<c10::Half>(const CudaCall&);

}  // namespace treduce
