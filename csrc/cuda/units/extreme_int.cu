// The kernels of amax and amin for integer and bool inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void extreme_kernels<bool>(const CudaCall&);
#define TREDUCE_INSTANTIATE(T) template void extreme_kernels<T>(const CudaCall&);
TREDUCE_INTEGER_TYPES(TREDUCE_INSTANTIATE)
#undef TREDUCE_INSTANTIATE

}  // namespace treduce
