// The kernels of prod for float64 inputs: one kernel unit (call.cuh).
#include "families.cuh"

namespace treduce {

template void prod_kernels<double>(const CudaCall&);

}  // namespace treduce
