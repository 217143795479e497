// The kernels of prod for float32 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void prod_kernels<float>(const CudaCall&);

}  // namespace treduce
