// The kernels of mean for float8 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void mean_kernels<c10::Float8_e4m3fn>(const CudaCall&);
template void mean_kernels<c10::Float8_e5m2>(const CudaCall&);

}  // namespace treduce
