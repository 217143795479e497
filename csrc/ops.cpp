// ops.cpp: every schema of torch.ops.treduce, and the module init that lets Python load _C.
// Backends register their kernels beside their launchers (cpu/, cuda/); the Meta kernels (what
// torch.compile's fake tensors run) beside the rules in plan.cpp; autograd in autograd.cpp. The
// op list itself is op_list.h.
#include <Python.h>
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

// Importing torch_reduce._C runs the static registrations above; the module itself is empty.
extern "C" PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
