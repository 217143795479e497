// The kernels of sum for bfloat16 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void sum_kernels<c10::BFloat16>(const CudaCall&);

}  // namespace treduce
