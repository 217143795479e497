// The kernels of mean for float32 and float64 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void mean_kernels<float>(const CudaCall&);
template void mean_kernels<double>(const CudaCall&);

}  // namespace treduce
