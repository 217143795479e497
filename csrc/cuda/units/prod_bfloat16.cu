// The kernels of prod for bfloat16 inputs but the small-output ones (prod_bfloat16_small.cu): one
// kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

extern template TREDUCE_RUN_SMALL(CanonProdOp<float>, __nv_bfloat16, __nv_bfloat16);
template void prod_kernels<c10::BFloat16>(const CudaCall&);

}  // namespace treduce
