// The kernels of argmax and argmin for integer inputs (torch has no argmax of bool): one kernel
// unit (call.cuh).
#include "families.cuh"

namespace treduce {

#define TREDUCE_INSTANTIATE(T) template void arg_kernels<T>(const CudaCall&);
TREDUCE_INTEGER_TYPES(TREDUCE_INSTANTIATE)
#undef TREDUCE_INSTANTIATE

}  // namespace treduce
