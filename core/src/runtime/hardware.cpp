#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

cluster_spec cluster_of(const gpu_spec& gpu, std::uint64_t gpus) {
  cluster_spec cluster;
  cluster.gpu = gpu;
  cluster.gpus = gpus;
  cluster.gpus_per_node = gpus;
  cluster.cuda_context_bytes = default_cuda_context_bytes(gpu.architecture);
  return cluster;
}

std::uint64_t ranks_per_node(const cluster_spec& cluster) {
  return cluster.gpus_per_node > 0 && cluster.gpus_per_node < cluster.gpus ? cluster.gpus_per_node
                                                                           : cluster.gpus;
}

std::uint64_t default_cuda_context_bytes(const std::string& architecture) {
  // Measured with lazy module loading (CUDA >= 11.7 and PyTorch >= 1.13, which sets
  // CUDA_MODULE_LOADING=LAZY). Override per request (cluster.cuda_context_bytes) for other setups.
  if (architecture == "hopper" || architecture == "blackwell") {
    // H100 80GB HBM3, PyTorch 2.11 + CUDA 13, driver 580: 650,969,088 bytes above the idle
    // device after CUDA initialisation and a one-element tensor, less its 2 MiB segment
    // (validation/measured_h100.json, point h100-cuda-context, tools/measure/measure.py).
    // Blackwell: no measurement yet; Hopper's figure.
    return 650969088ULL - (2ULL << 20);
  }
  if (architecture == "ada") {
    // RTX 6000 Ada, PyTorch 2.10 + CUDA 13.0: 426 MiB in nvidia-smi with an empty allocator
    // (unslothai/unsloth-zoo pull request 1053).
    return 426ULL << 20;
  }
  if (architecture == "ampere") {
    // RTX 3090, PyTorch 2.7.1 + CUDA 12.8: 256 MiB per process (invoke-ai/InvokeAI issue 9413).
    return 256ULL << 20;
  }
  // Volta, Turing and anything else: PyTorch's own measurement when it made lazy loading the
  // default, 287,047,680 bytes (pytorch/pytorch pull request 86509; 666,632,192 eager), which
  // matches the "about 300 MB" maintainers quote (pytorch/pytorch issue 107667).
  return 287047680ULL;
}

std::uint64_t cuda_libraries_bytes() { return 102760448ULL - 35651584ULL; }

std::uint64_t cublas_workspace_bytes(const std::string& architecture) {
  if (architecture == "hopper" || architecture == "blackwell") return 32ULL << 20;
  return 4096ULL * 1024 * 2 + 16ULL * 1024 * 8;
}

}  // namespace gpumem
