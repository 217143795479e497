// The kernels of bitwise_and, bitwise_or and bitwise_xor for integer and bool inputs: one kernel
// unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void bitwise_kernels<bool>(const CudaCall&);
template void bitwise_kernels<uint8_t>(const CudaCall&);
template void bitwise_kernels<int8_t>(const CudaCall&);
template void bitwise_kernels<int16_t>(const CudaCall&);
template void bitwise_kernels<int32_t>(const CudaCall&);
template void bitwise_kernels<int64_t>(const CudaCall&);

}  // namespace treduce
