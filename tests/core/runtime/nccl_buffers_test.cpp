// NCCL's buffers per communicator (nccl_buffers.cpp), against the sizes NCCL's code gives:
// 24 channels of ring and tree connections, 2 MiB-rounded buffers, NVLink SHARP on Hoppers.

#include "gpumem/runtime/nccl_buffers.hpp"

#include <doctest/doctest.h>

namespace gpumem {
namespace {

gpu_spec gpu(const char* architecture, double link) {
  gpu_spec g;
  g.architecture = architecture;
  g.link_bandwidth_bytes_per_s = link;
  return g;
}

constexpr std::uint64_t mib = 1ULL << 20;

TEST_CASE("NCCL's buffers: A100 read mode, H100 write mode and NVLS by release, PCIe apart") {
  const gpu_spec a100 = gpu("ampere", 300e9);
  const gpu_spec h100 = gpu("hopper", 450e9);
  // 24 channels x (6 MiB sent + 6 MiB received) per connection; 2 ranks connect once.
  CHECK(nccl_communicator_bytes(a100, 2, 21).bytes == 24 * 12 * mib);
  CHECK(nccl_communicator_bytes(a100, 8, 21).bytes == 24 * 24 * mib);
  // Hopper: 2 MiB sent, 10 received; NVLS from 3 ranks: 8 heads x channels x 2 x (B + 2 MiB).
  CHECK(nccl_communicator_bytes(h100, 2, 21).bytes == 24 * 12 * mib);
  CHECK(nccl_communicator_bytes(h100, 8, 18).bytes == 576 * mib + 8 * 16 * 2 * 6 * mib);
  CHECK(nccl_communicator_bytes(h100, 8, 20).bytes == 576 * mib + 8 * 24 * 2 * 6 * mib);
  CHECK(nccl_communicator_bytes(h100, 8, 21).bytes == 576 * mib + 8 * 24 * 2 * 3 * mib);
  CHECK(nccl_communicator_bytes(h100, 4, 21).bytes == 576 * mib + 4 * 24 * 2 * 3 * mib);
  // NCCL 2.14 (torch 2.0) predates the NVLS sizes read here: ring and tree only.
  CHECK(nccl_communicator_bytes(h100, 8, 14).bytes == 576 * mib);
  // One rank has no communicator; PCIe cards and unmodelled links count nothing, and say why.
  CHECK(nccl_communicator_bytes(h100, 1, 21).bytes == 0);
  const nccl_estimate pcie = nccl_communicator_bytes(gpu("ada", 32e9), 8, 21);
  CHECK(pcie.bytes == 0);
  CHECK(pcie.note.find("PCIe") != std::string::npos);
  CHECK(nccl_communicator_bytes(gpu("volta", 150e9), 8, 21).bytes == 0);
}

}  // namespace
}  // namespace gpumem
