// The kernels of sum for integer and bool inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void sum_kernels<bool>(const CudaCall&);
#define TREDUCE_INSTANTIATE(T) template void sum_kernels<T>(const CudaCall&);
TREDUCE_INTEGER_TYPES(TREDUCE_INSTANTIATE)
#undef TREDUCE_INSTANTIATE

}  // namespace treduce
