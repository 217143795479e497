// torch_reduce.h: the C++ API of torch-reduce, for LibTorch programs.
//
//   #include <torch_reduce/torch_reduce.h>
//   at::Tensor s = treduce::sum(x, {{1}}, /*keepdim=*/false, at::kDouble);
//
// Each function calls torch.ops.treduce.<name> through the dispatcher, so it runs the same CPU or
// CUDA kernel as Python does, on the current stream, with autograd and with the same semantics
// (torch's, see docs/semantics.md): treduce::sum(x, dim, keepdim, dtype) == at::sum(...) in value
// rules, output dtype, shape and exception types.
//
// Build with CMake:
//   find_package(TorchReduce REQUIRED)   # prefix: python -c "import torch_reduce as t;
//   print(t.cmake_prefix_path)" target_link_libraries(app TorchReduce::torch_reduce)
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/OptionalArrayRef.h>

#include <cstdint>
#include <optional>

#define TORCH_REDUCE_API __attribute__((visibility("default")))

namespace treduce {

// sum, mean, prod: dim None (every dim) or a list, keepdim, and the dtype to accumulate in and
// return (None: torch's rule, e.g. integers and bool sum to int64).
TORCH_REDUCE_API at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim = std::nullopt,
                                bool keepdim = false,
                                std::optional<at::ScalarType> dtype = std::nullopt);
TORCH_REDUCE_API at::Tensor mean(const at::Tensor& self, at::OptionalIntArrayRef dim = std::nullopt,
                                 bool keepdim = false,
                                 std::optional<at::ScalarType> dtype = std::nullopt);
TORCH_REDUCE_API at::Tensor prod(const at::Tensor& self, at::OptionalIntArrayRef dim = std::nullopt,
                                 bool keepdim = false,
                                 std::optional<at::ScalarType> dtype = std::nullopt);

// amax, amin: dim {} reduces every dim, as at::amax does. NaN propagates.
TORCH_REDUCE_API at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim = {},
                                 bool keepdim = false);
TORCH_REDUCE_API at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim = {},
                                 bool keepdim = false);

// argmax, argmin: dim None gives the index into the flattened tensor; ties give the first index.
TORCH_REDUCE_API at::Tensor argmax(const at::Tensor& self,
                                   std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
TORCH_REDUCE_API at::Tensor argmin(const at::Tensor& self,
                                   std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// bitwise_and, bitwise_or, bitwise_xor: integer and bool tensors; the result keeps the dtype.
TORCH_REDUCE_API at::Tensor bitwise_and(const at::Tensor& self,
                                        at::OptionalIntArrayRef dim = std::nullopt,
                                        bool keepdim = false);
TORCH_REDUCE_API at::Tensor bitwise_or(const at::Tensor& self,
                                       at::OptionalIntArrayRef dim = std::nullopt,
                                       bool keepdim = false);
TORCH_REDUCE_API at::Tensor bitwise_xor(const at::Tensor& self,
                                        at::OptionalIntArrayRef dim = std::nullopt,
                                        bool keepdim = false);

// The number of ops in torch.ops.treduce (their schemas are registered when libtorch_reduce.so is
// loaded, before this returns).
TORCH_REDUCE_API int64_t num_ops();

namespace detail {
// The registrations run when libtorch_reduce.so is loaded. A program that reaches the ops only by
// name, as an AOTInductor package does, references no symbol of the library, and a linker that
// drops unreferenced libraries (--as-needed, the default of several distributions) would leave
// it out, so that the ops are missing at run time. This call at static initialisation, in every
// file that includes this header, keeps the library in the program.
[[maybe_unused]] static const int64_t kLinked = ::treduce::num_ops();
}  // namespace detail

}  // namespace treduce
