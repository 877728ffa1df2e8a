// NCCL 2.18-2.21's device buffers for collectives (NVIDIA/nccl at v2.18.3-1 and v2.21.5-1):
// - every connection's receiver allocates a 4 KiB header and the LL (512 KiB), LL128
//   (4,915,200 B) and Simple (NCCL_BUFFSIZE, 4 MiB) buffers, each rounded up to CUDA_IPC_MIN,
//   2 MiB (src/transport/p2p.cc, src/init.cc, src/include/comm.h): 10 MiB; the sender a header,
//   2 MiB. On A100s over NVLink (compute capability 8.0, P2P read mode: src/graph/paths.cc) the
//   Simple buffer moves to the sender: 6 MiB each side.
// - ring and tree are connected at init, over the same connection slot; inside a node the tree is
//   a chain along the ring, so a rank in its middle sends and receives twice per channel, a
//   2-rank communicator once (src/graph/connect.cc, src/transport.cc).
// - 24 collective channels on 8 NVSwitch A100s ("Channel 23/24", NVIDIA/nccl-tests issue 100)
//   and H100s (the NVLS sizes vLLM issue 9699 logs), and on 2 ranks of such a node (NVIDIA/nccl
//   issue 1781).
// - NVLink SHARP on NVSwitch Hoppers with 3 or more ranks (NCCL_NVLS_ENABLE auto,
//   src/transport/nvls.cc): nHeads x channels x 2 x (buffer + 2 MiB): 16 channels of 4 MiB in
//   2.18-2.19, 24 of 4 MiB in 2.20, 24 of 1 MiB in 2.21 ("Reduce NVLS memory usage").
// Left out: the per-channel device arrays (a few MiB, more when cuMem rounds them up) and
// send/recv connections, made lazily on the first send or receive.
#include "gpumem/runtime/nccl_buffers.hpp"

#include <algorithm>

namespace gpumem {

namespace {

constexpr std::uint64_t mib = 1ULL << 20;

}  // namespace

nccl_estimate nccl_communicator_bytes(const gpu_spec& gpu, std::uint64_t ranks, unsigned minor) {
  nccl_estimate out;
  if (ranks < 2) return out;
  // NVLink/NVSwitch nodes: a per-direction link above 100 GB/s (presets/gpus.json); over PCIe
  // NCCL uses 2-4 channels, or host shared memory where GPUs have no P2P path (GeForce).
  const bool nvswitch = gpu.link_bandwidth_bytes_per_s >= 100e9;
  const bool ampere = gpu.architecture == "ampere";
  const bool hopper = gpu.architecture == "hopper";
  if (!nvswitch || !(ampere || hopper)) {
    out.note = nvswitch ? "NCCL's buffers on this GPU's links are not modelled: not counted"
                        : "NCCL's buffers over PCIe (tens of MiB, or host memory): not counted";
    return out;
  }
  const std::uint64_t channels = 24;
  const std::uint64_t connections = ranks == 2 ? 1 : 2;  // sends (and receives) per channel
  const std::uint64_t per_connection = ampere ? 6 * mib + 6 * mib : 2 * mib + 10 * mib;
  out.bytes = channels * connections * per_connection;
  if (hopper && ranks >= 3 && minor >= 18) {
    const std::uint64_t heads = std::min<std::uint64_t>(ranks, 8);  // one NVSwitch node
    const std::uint64_t nvls_channels = minor >= 20 ? 24 : 16;
    const std::uint64_t buffer = minor >= 21 ? 1 * mib : 4 * mib;
    out.bytes += heads * nvls_channels * 2 * (buffer + 2 * mib);
  }
  out.note = "NCCL 2." + std::to_string(minor) + "'s buffers for a communicator of " +
             std::to_string(ranks) + " GPUs: " + std::to_string(out.bytes / mib) +
             " MiB per GPU outside PyTorch's allocator (ring and tree" +
             (hopper && ranks >= 3 && minor >= 18 ? ", NVLink SHARP" : "") + ")";
  return out;
}

}  // namespace gpumem
