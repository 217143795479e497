// aoti_run: loads the AOTInductor packages that export_model.py made (the model calls treduce ops)
// with AOTIModelPackageLoader, runs them on several batch sizes (the batch dim is dynamic), and
// checks every output against ATen. The CPU package always; the CUDA one when there is a GPU.
//   aoti_run <folder with reduce_cpu.pt2 [and reduce_cuda.pt2]>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>
#include <torch_reduce/torch_reduce.h>  // no function of it is called: it keeps the ops registered

#include <iostream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok    " : "FAIL  ") << what << "\n";
  if (!ok) ++failures;
}

// The model of export_model.py: (sum(relu(x), 1), amax(x, 1), argmax(x, 1), mean(x, 0, float64)).
void run_package(const std::string& path, const at::Device& device) {
  torch::inductor::AOTIModelPackageLoader loader(path);
  for (int64_t batch : {2, 7, 64, 1000}) {
    torch::manual_seed(batch);
    const at::Tensor x = torch::randn({batch, 48}).to(device);
    const std::vector<at::Tensor> out = loader.run({x});
    const at::Tensor ref = x.cpu().to(at::kDouble);
    const std::string what = device.str() + " batch " + std::to_string(batch);
    check(out.size() == 4, what + ": 4 outputs");
    if (out.size() != 4) continue;
    check(out[0].device() == device && out[0].scalar_type() == at::kFloat &&
              out[0].cpu().to(at::kDouble).allclose(ref.relu().sum(1), 1e-6, 1e-6),
          what + ": sum(relu(x), 1)");
    check(out[1].cpu().equal(x.amax(1).cpu()), what + ": amax(x, 1)");
    check(out[2].cpu().equal(x.argmax(1).cpu()), what + ": argmax(x, 1)");
    check(out[3].scalar_type() == at::kDouble && out[3].cpu().allclose(ref.mean(0), 1e-12, 1e-12),
          what + ": mean(x, 0, dtype=float64)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: aoti_run <folder with reduce_cpu.pt2 [and reduce_cuda.pt2]>\n";
    return 2;
  }
  const std::string folder = argv[1];
  run_package(folder + "/reduce_cpu.pt2", at::kCPU);
  if (torch::cuda::is_available()) {
    run_package(folder + "/reduce_cuda.pt2", at::Device(at::kCUDA, 0));
  } else {
    std::cout << "no GPU: the CUDA package did not run\n";
  }
  std::cout << (failures ? "FAILED: " + std::to_string(failures) + " checks" : "all checks passed")
            << "\n";
  return failures ? 1 : 0;
}
