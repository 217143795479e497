// fast.cpp: torch_reduce._fast, the Python entry point of the typed wrappers in
// torch_reduce/ops.py.
//
// Calling an op through torch.ops parses every Python argument against the schema and boxes it
// (~0.5 µs per call on the H200's host, ~1 µs more than torch.sum's own binding with the Python
// wrapper around it, measured on the H200 host). This module takes the common calls straight to the
// dispatcher instead: a plain tensor (torch.Tensor or nn.Parameter, no torch-function mode
// active), dims as None, an int or a list / tuple of ints, a bool keepdim and an optional
// torch.dtype. It calls the same registered op (its Autograd kernel, then CPU or CUDA), so
// results, autograd and errors are those of torch.ops.treduce. For anything else it returns
// NotImplemented and the wrapper takes the torch.ops path, which handles __torch_function__,
// SymInts and argument errors as torch does. It needs torch's Python headers, so it is built
// apart from libtorch_reduce.so (which uses no Python).
#include <Python.h>

#include <ATen/ATen.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <optional>
#include <vector>

#include "../op_list.h"

namespace treduce {
namespace {

// The op codes that torch_reduce/ops.py passes: OpKind's values, which this module exports as
// OPS, a dict from op name to code (op_list.h).
constexpr long kSum = static_cast<long>(OpKind::kSum), kMean = static_cast<long>(OpKind::kMean),
               kProd = static_cast<long>(OpKind::kProd), kAmax = static_cast<long>(OpKind::kAmax),
               kAmin = static_cast<long>(OpKind::kAmin),
               kArgmax = static_cast<long>(OpKind::kArgmax),
               kArgmin = static_cast<long>(OpKind::kArgmin), kAnd = static_cast<long>(OpKind::kAnd),
               kOr = static_cast<long>(OpKind::kOr);

using SumSig = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                          std::optional<at::ScalarType>);
using ExtremeSig = at::Tensor(const at::Tensor&, at::IntArrayRef, bool);
using ArgSig = at::Tensor(const at::Tensor&, std::optional<int64_t>, bool);
using BitSig = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool);

// The ops' handles, looked up once when the module is imported (after libtorch_reduce.so registered
// them).
struct Handles {
  std::optional<c10::TypedOperatorHandle<SumSig>> sum, mean, prod;
  std::optional<c10::TypedOperatorHandle<ExtremeSig>> amax, amin;
  std::optional<c10::TypedOperatorHandle<ArgSig>> argmax, argmin;
  std::optional<c10::TypedOperatorHandle<BitSig>> bit_and, bit_or, bit_xor;
};
Handles ops;

template <class Sig>
c10::TypedOperatorHandle<Sig> find(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

void find_all() {
  ops.sum = find<SumSig>("treduce::sum");
  ops.mean = find<SumSig>("treduce::mean");
  ops.prod = find<SumSig>("treduce::prod");
  ops.amax = find<ExtremeSig>("treduce::amax");
  ops.amin = find<ExtremeSig>("treduce::amin");
  ops.argmax = find<ArgSig>("treduce::argmax");
  ops.argmin = find<ArgSig>("treduce::argmin");
  ops.bit_and = find<BitSig>("treduce::bitwise_and");
  ops.bit_or = find<BitSig>("treduce::bitwise_or");
  ops.bit_xor = find<BitSig>("treduce::bitwise_xor");
}

// An int (not a bool, a tensor or a SymInt) that fits int64: true, with its value in d.
bool parse_int(PyObject* o, int64_t& d) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  d = PyLong_AsLongLongAndOverflow(o, &overflow);
  return overflow == 0 && !(d == -1 && PyErr_Occurred());
}

// dims: None -> nullopt; an int -> {d}; a list or tuple of ints -> the ints. Anything else:
// false, the torch.ops path then decides.
bool parse_dims(PyObject* obj, std::optional<std::vector<int64_t>>& dims) {
  if (obj == Py_None) return true;
  int64_t d = 0;
  if (PyLong_CheckExact(obj)) {
    if (!parse_int(obj, d)) return false;
    dims.emplace(1, d);
    return true;
  }
  if (!PyList_CheckExact(obj) && !PyTuple_CheckExact(obj)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
  PyObject** items = PySequence_Fast_ITEMS(obj);
  dims.emplace();
  dims->reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!parse_int(items[i], d)) return false;
    dims->push_back(d);
  }
  return true;
}

// The GIL released while the op runs, as torch's own bindings do (restored on any exit).
struct ReleaseGil {
  PyThreadState* state = PyEval_SaveThread();
  ~ReleaseGil() { PyEval_RestoreThread(state); }
};

PyObject* not_handled() {
  PyErr_Clear();  // a failed int conversion may have set one
  Py_RETURN_NOTIMPLEMENTED;
}

// call(code, input, dim, keepdim, dtype): the op's result, or NotImplemented (see above).
PyObject* call(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 5 || !PyLong_CheckExact(args[0])) return not_handled();
  const long code = PyLong_AsLong(args[0]);
  PyObject* const input = args[1];
  PyObject* const dim = args[2];
  PyObject* const keepdim_obj = args[3];
  PyObject* const dtype_obj = args[4];
  if (code < 0 || code >= kNumOps || !THPVariable_CheckExact(input) ||
      at::impl::torch_function_mode_enabled() || !PyBool_Check(keepdim_obj))
    return not_handled();
  const bool keepdim = keepdim_obj == Py_True;
  std::optional<at::ScalarType> dtype;
  if (dtype_obj != Py_None) {
    if (!THPDtype_Check(dtype_obj) || !(code == kSum || code == kMean || code == kProd))
      return not_handled();
    dtype = reinterpret_cast<THPDtype*>(dtype_obj)->scalar_type;
  }
  const at::Tensor& x = THPVariable_Unpack(input);
  std::optional<int64_t> arg_dim;
  std::optional<std::vector<int64_t>> dims;
  if (code == kArgmax || code == kArgmin) {
    int64_t d = 0;
    if (dim != Py_None && !parse_int(dim, d)) return not_handled();
    if (dim != Py_None) arg_dim = d;
  } else if (!parse_dims(dim, dims)) {
    return not_handled();
  }
  at::Tensor out;
  {
    ReleaseGil no_gil;
    const at::OptionalIntArrayRef opt_dims =
        dims ? at::OptionalIntArrayRef(*dims) : at::OptionalIntArrayRef();
    const at::IntArrayRef all_or_dims = dims ? at::IntArrayRef(*dims) : at::IntArrayRef();
    switch (code) {  // amax / amin: the wrappers' dim=None and () both mean every dim
      case kSum:
        out = ops.sum->call(x, opt_dims, keepdim, dtype);
        break;
      case kMean:
        out = ops.mean->call(x, opt_dims, keepdim, dtype);
        break;
      case kProd:
        out = ops.prod->call(x, opt_dims, keepdim, dtype);
        break;
      case kAmax:
        out = ops.amax->call(x, all_or_dims, keepdim);
        break;
      case kAmin:
        out = ops.amin->call(x, all_or_dims, keepdim);
        break;
      case kArgmax:
        out = ops.argmax->call(x, arg_dim, keepdim);
        break;
      case kArgmin:
        out = ops.argmin->call(x, arg_dim, keepdim);
        break;
      case kAnd:
        out = ops.bit_and->call(x, opt_dims, keepdim);
        break;
      case kOr:
        out = ops.bit_or->call(x, opt_dims, keepdim);
        break;
      default:
        out = ops.bit_xor->call(x, opt_dims, keepdim);
    }
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call)), METH_FASTCALL,
     "call(code, input, dim, keepdim, dtype): the op's result, or NotImplemented."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace
}  // namespace treduce

extern "C" PyObject* PyInit__fast(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_fast", nullptr, -1,
                                          treduce::methods};
  try {
    treduce::find_all();
  } catch (const std::exception& e) {  // the library is not loaded: import torch_reduce
    PyErr_SetString(PyExc_ImportError, e.what());
    return nullptr;
  }
  PyObject* module = PyModule_Create(&module_def);
  if (module == nullptr) return nullptr;
  PyObject* codes = PyDict_New();  // OPS: {name: code}, from op_list.h
  bool ok = codes != nullptr;
#define TREDUCE_OP_CODE(kind, name)                                          \
  if (ok) {                                                                  \
    PyObject* v = PyLong_FromLong(static_cast<long>(treduce::OpKind::kind)); \
    ok = v != nullptr && PyDict_SetItemString(codes, name, v) == 0;          \
    Py_XDECREF(v);                                                           \
  }
  TREDUCE_OPS(TREDUCE_OP_CODE)
#undef TREDUCE_OP_CODE
  if (!ok || PyModule_AddObject(module, "OPS", codes) != 0) {
    Py_XDECREF(codes);
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
