// The kernels of argmax and argmin for integer inputs (torch has no argmax of bool): one kernel
// unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void arg_kernels<uint8_t>(const CudaCall&);
template void arg_kernels<int8_t>(const CudaCall&);
template void arg_kernels<int16_t>(const CudaCall&);
template void arg_kernels<int32_t>(const CudaCall&);
template void arg_kernels<int64_t>(const CudaCall&);

}  // namespace treduce
