// The kernels of argmax and argmin for floating inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void arg_kernels<float>(const CudaCall&);
template void arg_kernels<double>(const CudaCall&);
template void arg_kernels<c10::Half>(const CudaCall&);
template void arg_kernels<c10::BFloat16>(const CudaCall&);

}  // namespace treduce
