// ops.cpp: every schema of torch.ops.treduce. They register when libtorch_reduce.so is loaded, by
// Python (torch_reduce/__init__.py) or by a C++ program that links it (api.cpp).
// Backends register their kernels beside their launchers (cpu/, cuda/); the Meta kernels (what
// torch.compile's fake tensors run) beside the rules in plan.cpp; autograd in autograd.cpp. The
// op list itself is op_list.h.
#include <torch/library.h>

TORCH_LIBRARY(treduce, m) {
  m.set_python_module("torch_reduce.ops");
  m.def(
      "sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> "
      "Tensor");
  m.def(
      "mean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> "
      "Tensor");
  m.def(
      "prod(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> "
      "Tensor");
  m.def("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor");
  m.def("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor");
  m.def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("bitwise_and(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor");
  m.def("bitwise_or(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor");
  m.def("bitwise_xor(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor");
}
