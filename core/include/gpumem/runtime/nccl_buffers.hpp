#pragma once
// The device memory NCCL allocates per communicator outside PyTorch's caching allocator: it
// shows in nvidia-smi's used memory (device_used), not in torch.cuda.memory_reserved().

#include <cstdint>
#include <string>

#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

struct nccl_estimate {
  std::uint64_t bytes = 0;  // per rank
  std::string note;         // how it was read, or why nothing is counted
};

// One communicator of `ranks` GPUs of `gpu`'s kind, collectives only, under NCCL 2.`minor`
// (torch 2.1 ships 2.18, 2.2 2.19, 2.3-2.4 2.20, 2.5 2.21).
nccl_estimate nccl_communicator_bytes(const gpu_spec& gpu, std::uint64_t ranks, unsigned minor);

}  // namespace gpumem
