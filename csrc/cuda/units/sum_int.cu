// The kernels of sum for integer and bool inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void sum_kernels<bool>(const CudaCall&);
template void sum_kernels<uint8_t>(const CudaCall&);
template void sum_kernels<int8_t>(const CudaCall&);
template void sum_kernels<int16_t>(const CudaCall&);
template void sum_kernels<int32_t>(const CudaCall&);
template void sum_kernels<int64_t>(const CudaCall&);

}  // namespace treduce
