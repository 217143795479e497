// The kernels of mean for float16 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void mean_kernels<c10::Half>(const CudaCall&);

}  // namespace treduce
