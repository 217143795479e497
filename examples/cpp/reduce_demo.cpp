// reduce_demo: the C++ API of torch-reduce against ATen's own reductions, on the CPU and, when
// there is one, on the GPU. Exits non-zero on the first wrong answer class (every check is
// printed).
#include <torch/torch.h>
#include <torch_reduce/torch_reduce.h>

#include <iostream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok    " : "FAIL  ") << what << "\n";
  if (!ok) ++failures;
}

bool same(const at::Tensor& a, const at::Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.cpu().equal(b.cpu());
}

bool close(const at::Tensor& got, const at::Tensor& want, double rtol, double atol) {
  return got.sizes() == want.sizes() &&
         got.cpu().to(at::kDouble).allclose(want.cpu().to(at::kDouble), rtol, atol);
}

void run_on(const at::Device& device) {
  const std::string on = " on " + device.str();
  torch::manual_seed(0);
  const at::Tensor x64 = torch::randn({1000, 33}, at::kDouble);  // the float64 reference data
  const at::Tensor x = x64.to(at::kFloat).to(device);
  const at::Tensor exact = x.cpu().to(at::kDouble);  // x's values, summed in float64 below

  // sum: float32 rows, correctly rounded in practice; dtype= accumulates and returns float64
  const at::Tensor rows = treduce::sum(x, {1});
  check(rows.scalar_type() == at::kFloat && close(rows, exact.sum(1), 1e-6, 1e-6),
        "sum(x, {1}) float32" + on);
  const at::Tensor rows64 = treduce::sum(x, {1}, false, at::kDouble);
  check(rows64.scalar_type() == at::kDouble && close(rows64, exact.sum(1), 1e-12, 1e-12),
        "sum(x, {1}, dtype=float64)" + on);
  const at::Tensor ints = torch::randint(-1000, 1000, {257, 31}, at::kInt).to(device);
  check(same(treduce::sum(ints), ints.sum()), "sum(int32) -> int64, every dim" + on);
  check(same(treduce::sum(ints, {0}, true), ints.sum(0, true)), "sum(int32, {0}, keepdim)" + on);

  // mean, prod
  const at::Tensor m = treduce::mean(x, {0}, true);
  check(m.sizes() == at::IntArrayRef({1, 33}) && close(m, exact.mean(0, true), 1e-6, 1e-6),
        "mean(x, {0}, keepdim)" + on);
  const at::Tensor small = (x.narrow(0, 0, 40) * 0.05 + 1).contiguous();
  check(close(treduce::prod(small, {0}), small.cpu().to(at::kDouble).prod(0), 1e-5, 0),
        "prod(x, {0})" + on);

  // amax, amin, argmax, argmin: exact, ties give the first index
  check(same(treduce::amax(x, {1}), x.amax(1)), "amax(x, {1})" + on);
  check(same(treduce::amin(x), x.amin()), "amin(x), every dim" + on);
  check(same(treduce::argmax(x, 1), x.argmax(1)), "argmax(x, 1)" + on);
  check(same(treduce::argmin(x), x.argmin()), "argmin(x), flattened" + on);

  // bitwise_xor over columns, against a fold with ATen's elementwise xor
  at::Tensor folded = ints.select(1, 0).clone();
  for (int64_t j = 1; j < ints.size(1); ++j) folded = folded.bitwise_xor(ints.select(1, j));
  check(same(treduce::bitwise_xor(ints, {1}), folded), "bitwise_xor(int32, {1})" + on);

  // autograd through sum and mean: the gradients of sum(w * w) and of sum(mean(w, 1))
  at::Tensor w = x.detach().clone().requires_grad_(true);
  treduce::sum(w * w).backward();
  check(close(w.grad(), 2 * x, 1e-6, 0), "backward through sum(w * w)" + on);
  w.mutable_grad() = at::Tensor();
  treduce::sum(treduce::mean(w, {1})).backward();
  check(close(w.grad(), torch::full_like(x, 1.0 / 33), 1e-6, 0),
        "backward through mean(w, {1})" + on);

  // errors: torch's exception types
  bool index_error = false;
  try {
    treduce::sum(x, {2});
  } catch (const c10::IndexError&) {
    index_error = true;
  }
  check(index_error, "sum(x, {2}) on a 2-d tensor throws c10::IndexError" + on);
}

}  // namespace

int main() {
  check(treduce::num_ops() == 10, "torch.ops.treduce has its 10 ops");
  run_on(at::kCPU);
  if (torch::cuda::is_available()) {
    run_on(at::Device(at::kCUDA, 0));
  } else {
    std::cout << "no GPU: the CUDA checks did not run\n";
  }
  std::cout << (failures ? "FAILED: " + std::to_string(failures) + " checks" : "all checks passed")
            << "\n";
  return failures ? 1 : 0;
}
