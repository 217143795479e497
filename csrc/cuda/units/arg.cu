// The kernels of argmax and argmin for every input dtype (not bool): one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void arg_kernels<float>(const CudaCall&);
template void arg_kernels<double>(const CudaCall&);
template void arg_kernels<c10::Half>(const CudaCall&);
template void arg_kernels<c10::BFloat16>(const CudaCall&);
template void arg_kernels<uint8_t>(const CudaCall&);
template void arg_kernels<int8_t>(const CudaCall&);
template void arg_kernels<int16_t>(const CudaCall&);
template void arg_kernels<int32_t>(const CudaCall&);
template void arg_kernels<int64_t>(const CudaCall&);

}  // namespace treduce
