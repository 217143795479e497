// plan_dump_stubs.cpp: the CUDA runtime queries that the canonical planner makes, answered
// without a device for tools/plan_dump.cu. Host C++ only (nvcc's device runtime header defines
// device-side versions of the same names); the executable's definitions take precedence over
// the shared cudart's.
#include <cuda_runtime_api.h>

extern "C" {
int plan_dump_blocks_per_sm = 3;
int plan_dump_max_cluster = 16;

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void*, int, size_t) {
  *n = plan_dump_blocks_per_sm;
  return cudaSuccess;
}
// cuda_runtime.h's template overload, which the planner's occupancy() calls, goes here.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void*, int, size_t,
                                                                   unsigned) {
  *n = plan_dump_blocks_per_sm;
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveClusters(int* n, const void*, const cudaLaunchConfig_t* cfg) {
  const unsigned size = cfg->attrs[0].val.clusterDim.x * cfg->attrs[0].val.clusterDim.y;
  *n = size <= unsigned(plan_dump_max_cluster) ? 1 : 0;
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
}
