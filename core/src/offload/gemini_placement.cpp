#include "gpumem/offload/gemini_placement.hpp"

#include <algorithm>
#include <cmath>

namespace gpumem {

std::uint64_t gemini_chunks_kept(std::uint64_t cpu_placement_peak, std::uint64_t gpu_placement_peak,
                                 std::uint64_t memory_bytes, std::uint64_t chunk_bytes) {
  const auto cap = static_cast<std::uint64_t>(
      std::floor(gemini_steady_cuda_cap_ratio * static_cast<double>(memory_bytes)));
  const std::uint64_t peak = std::max(cpu_placement_peak, std::min(gpu_placement_peak, cap));
  return std::min(peak - cpu_placement_peak, chunk_bytes);
}

std::uint64_t host_parameter_bytes(const host_footprint& host) {
  for (const auto& part : host.host) {
    if (part.name == "parameters") return part.bytes;
  }
  return 0;
}

void keep_chunks_on_gpu(training_estimate& cpu_placement, std::uint64_t kept) {
  cpu_placement.peak.allocated += kept;
  cpu_placement.peak_reserved += kept;
  cpu_placement.peak.by_category[static_cast<std::size_t>(memory_category::placed_chunks)] += kept;
}

void keep_chunks_off_host(host_footprint& host, std::uint64_t kept) {
  for (auto& part : host.host) {
    if (part.name != "parameters") continue;
    const std::uint64_t moved = std::min(part.bytes, kept);
    part.bytes -= moved;
    host.host_bytes -= moved;
  }
  // The chunks kept no longer travel over PCIe twice a step.
  host.pcie_bytes = std::max(0.0, host.pcie_bytes - 2.0 * static_cast<double>(kept));
}

}  // namespace gpumem
