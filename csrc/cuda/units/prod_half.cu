// The kernels of prod for float16 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void prod_kernels<c10::Half>(const CudaCall&);

}  // namespace treduce
