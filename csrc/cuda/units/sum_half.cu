// The kernels of sum for float16 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void sum_kernels<c10::Half>(const CudaCall&);

}  // namespace treduce
