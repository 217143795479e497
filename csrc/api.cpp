// api.cpp: the C++ API (torch_reduce/include/torch_reduce/torch_reduce.h). Each function calls its
// op through the dispatcher, as at::sum calls aten::sum, so autograd, the device's kernel and
// torch's argument checks all apply; the typed handle is looked up once.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch_reduce/torch_reduce.h>

#include "op_list.h"

namespace treduce {
namespace {

template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

using DtypeSig = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                            std::optional<at::ScalarType>);
using DimsSig = at::Tensor(const at::Tensor&, at::IntArrayRef, bool);
using ArgSig = at::Tensor(const at::Tensor&, std::optional<int64_t>, bool);
using OptDimsSig = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool);

}  // namespace

at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype) {
  static const auto op = handle<DtypeSig>("treduce::sum");
  return op.call(self, dim, keepdim, dtype);
}
at::Tensor mean(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                std::optional<at::ScalarType> dtype) {
  static const auto op = handle<DtypeSig>("treduce::mean");
  return op.call(self, dim, keepdim, dtype);
}
at::Tensor prod(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                std::optional<at::ScalarType> dtype) {
  static const auto op = handle<DtypeSig>("treduce::prod");
  return op.call(self, dim, keepdim, dtype);
}
at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  static const auto op = handle<DimsSig>("treduce::amax");
  return op.call(self, dim, keepdim);
}
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  static const auto op = handle<DimsSig>("treduce::amin");
  return op.call(self, dim, keepdim);
}
at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  static const auto op = handle<ArgSig>("treduce::argmax");
  return op.call(self, dim, keepdim);
}
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  static const auto op = handle<ArgSig>("treduce::argmin");
  return op.call(self, dim, keepdim);
}
at::Tensor bitwise_and(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  static const auto op = handle<OptDimsSig>("treduce::bitwise_and");
  return op.call(self, dim, keepdim);
}
at::Tensor bitwise_or(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  static const auto op = handle<OptDimsSig>("treduce::bitwise_or");
  return op.call(self, dim, keepdim);
}
at::Tensor bitwise_xor(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  static const auto op = handle<OptDimsSig>("treduce::bitwise_xor");
  return op.call(self, dim, keepdim);
}

int64_t num_ops() { return kNumOps; }

}  // namespace treduce
