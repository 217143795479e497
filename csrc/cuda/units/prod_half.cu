// The kernels of prod for float16 inputs but the small-output ones (prod_half_small.cu): one
// kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

extern template TREDUCE_RUN_SMALL(CanonProdOp<float>, __half, __half);
template void prod_kernels<c10::Half>(const CudaCall&);

}  // namespace treduce
