// The kernels of prod for integer and bool inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void prod_kernels<bool>(const CudaCall&);
template void prod_kernels<uint8_t>(const CudaCall&);
template void prod_kernels<int8_t>(const CudaCall&);
template void prod_kernels<int16_t>(const CudaCall&);
template void prod_kernels<int32_t>(const CudaCall&);
template void prod_kernels<int64_t>(const CudaCall&);

}  // namespace treduce
