#pragma once
// The machines an estimate is for: one GPU type (a preset from presets/gpus.json or custom
// figures) times a number of GPUs, and the runtime memory the CUDA driver takes on each.

#include <cstdint>
#include <string>

namespace gpumem {

struct gpu_spec {
  std::string id;  // preset id, or "custom"
  std::string name;
  std::string architecture;        // volta, turing, ampere, ada, hopper, blackwell, cdna2, cdna3
  std::uint64_t memory_bytes = 0;  // total the driver reports (nvidia-smi)
  double fp16_dense_flops = 0;     // tensor-core, dense, fp32 accumulate
  double bf16_dense_flops = 0;     // 0 when the GPU has no bf16 tensor cores
  double fp32_flops = 0;           // CUDA cores (no tensor cores); 0: not stated (step_time.hpp)
  double memory_bandwidth_bytes_per_s = 0;
  double link_bandwidth_bytes_per_s = 0;  // intra-node, per direction (NVLink or PCIe)
  double host_link_bandwidth_bytes_per_s = 0;
};

// Host-side speeds of a node for offloaded training (docs/methodology.md, "Offloading").
struct offload_speeds {
  // NVMe sequential bandwidth of the offload drive(s): assumed 3.5 GB/s read and 3.0 GB/s
  // write, one PCIe 4.0 x4 SSD below its interface's ~7.9 GB/s.
  double nvme_read_bytes_per_s = 3.5e9;
  double nvme_write_bytes_per_s = 3.0e9;
  // The CPU optimizer's throughput per GPU rank, 1e9 parameters/s: the order DeepSpeed's CPU-Adam
  // reaches on a server CPU (deepspeedai/DeepSpeed PR #735: an 11.6B-parameter model stepped in
  // 8.2 s, 1.4e9/s). It depends on the CPU twentyfold (issue #1635: 1.35B in 22.9 s, 6e7/s, on a
  // 10-core Xeon Silver 4210R), so requests can set it.
  double cpu_optimizer_params_per_s = 1e9;
};

struct cluster_spec {
  gpu_spec gpu;
  std::uint64_t gpus = 1;           // ranks in the job
  std::uint64_t gpus_per_node = 0;  // 0: all on one node
  // Per-GPU bandwidth between nodes, per direction. Default 25e9 B/s: one 200 Gb/s
  // InfiniBand HDR adapter per GPU, as in NVIDIA DGX A100 (8 HDR ports for 8 GPUs).
  double inter_node_bandwidth_bytes_per_s = 25e9;
  std::uint64_t cuda_context_bytes = 0;  // device memory of the CUDA context per process
  std::uint64_t headroom_bytes = 0;      // kept free: usable = memory_bytes - headroom_bytes
  // Offload budgets per node (0: not checked) and host speeds.
  std::uint64_t host_ram_bytes = 0;
  std::uint64_t nvme_bytes = 0;
  double price_per_gpu_hour = 0;  // what one GPU costs an hour (0: not given), for a plan's cost
  offload_speeds host;
};

// `gpus` of `gpu` on one node, each with the CUDA context of its architecture
// (default_cuda_context_bytes), nothing kept free and no host budget: a request's cluster before
// what it states.
cluster_spec cluster_of(const gpu_spec& gpu, std::uint64_t gpus);

// The ranks one node runs: gpus_per_node, or all of them on one node (0), never more than the job.
std::uint64_t ranks_per_node(const cluster_spec& cluster);

// The device memory a PyTorch process holds for its CUDA context (driver, kernels loaded
// lazily, as PyTorch >= 1.13 sets CUDA_MODULE_LOADING=LAZY), by GPU architecture, before any
// tensor: nvidia-smi's "used" minus the allocator's reserved bytes. Sources in the .cpp.
std::uint64_t default_cuda_context_bytes(const std::string& architecture);

// The cuBLAS workspace PyTorch allocates per (handle, stream): 32 MiB on Hopper and Blackwell,
// 4096 KiB x 2 + 16 KiB x 8 elsewhere (aten/src/ATen/cuda/CublasHandlePool.cpp).
std::uint64_t cublas_workspace_bytes(const std::string& architecture);

// Device memory a process holds beyond PyTorch's reserved pool: the CUDA context and the
// kernels cuBLAS/cuBLASLt load on their first matrix products (67,108,864 bytes on an H100:
// 102,760,448 of device memory for the first products less their 35,651,584 reserved bytes,
// validation/measured_h100.json point h100-cuda-context).
std::uint64_t cuda_libraries_bytes();

}  // namespace gpumem
