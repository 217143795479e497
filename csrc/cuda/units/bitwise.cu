// The kernels of bitwise_and, bitwise_or and bitwise_xor for integer and bool inputs: one kernel
// unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void bitwise_kernels<bool>(const CudaCall&);
#define TREDUCE_INSTANTIATE(T) template void bitwise_kernels<T>(const CudaCall&);
TREDUCE_INTEGER_TYPES(TREDUCE_INSTANTIATE)
#undef TREDUCE_INSTANTIATE

}  // namespace treduce
