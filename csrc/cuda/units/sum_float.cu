// The kernels of sum for float32 and float64 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void sum_kernels<float>(const CudaCall&);
template void sum_kernels<double>(const CudaCall&);

}  // namespace treduce
