// families.h: the CPU backend's op families, each instantiated in a unit of its own
// (family_*.cpp, from the kernels of reduce_cpu.h) so that they compile side by side;
// reduce_cpu.cpp registers them.
#pragma once
#include <ATen/core/Tensor.h>

#include "../plan.h"

namespace treduce {
namespace cpu_reduce {

void sum_mean_cpu(const Plan& plan, at::Tensor& out);      // family_sum.cpp: sum, mean
void prod_bitwise_cpu(const Plan& plan, at::Tensor& out);  // family_prod.cpp: prod, bitwise
void extreme_cpu(const Plan& plan, at::Tensor& out);       // family_extreme.cpp: amax ... argmin

}  // namespace cpu_reduce
}  // namespace treduce
