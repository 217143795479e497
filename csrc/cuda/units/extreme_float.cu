// The kernels of amax and amin for floating inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void extreme_kernels<float>(const CudaCall&);
template void extreme_kernels<double>(const CudaCall&);
template void extreme_kernels<c10::Half>(const CudaCall&);
template void extreme_kernels<c10::BFloat16>(const CudaCall&);
template void extreme_kernels<c10::Float8_e4m3fn>(const CudaCall&);
template void extreme_kernels<c10::Float8_e5m2>(const CudaCall&);

}  // namespace treduce
