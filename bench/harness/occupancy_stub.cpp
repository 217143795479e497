// The CUDA runtime's occupancy queries answered without a GPU, for bench/harness/column_plans.cu:
// every kernel at TREDUCE_OCCUPANCY blocks per SM (default 4: the 16-bit column kernel's 64
// registers). Linked ahead of the shared runtime (nvcc -cudart shared), so plan_canon's
// occupancy() sees these instead of the runtime's. Plain C++: the device runtime's headers
// declare the same names, so this cannot live in a .cu file.
#include <cstddef>
#include <cstdlib>

static int blocks_per_sm() {
  const char* v = std::getenv("TREDUCE_OCCUPANCY");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : 4;
}

extern "C" int cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void*, int, size_t) {
  *n = blocks_per_sm();
  return 0;
}

extern "C" int cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void*, int,
                                                                      size_t, unsigned) {
  *n = blocks_per_sm();
  return 0;
}
