// The kernels of mean for bfloat16 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void mean_kernels<c10::BFloat16>(const CudaCall&);

}  // namespace treduce
