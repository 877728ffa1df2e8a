// How the command line prints the parts of an estimate.
#include "print.hpp"

#include <cstdint>
#include <iostream>

#include "table.hpp"

namespace gpumem::cli {

using nlohmann::ordered_json;

std::string gib(const ordered_json& bytes) { return fixed(bytes.get<double>() / (1ULL << 30), 2); }

void print_components(const ordered_json& rank) {
  table t({"component", "GiB"});
  for (const auto& [name, bytes] : rank["components"].items()) t.row({name, gib(bytes)});
  t.row({"peak per GPU", gib(rank["peak_bytes"])});
  std::cout << t.render();
}

// The KV cache's size and, for paged caches, its capacity; a solved limit.
void print_kv_cache(const ordered_json& r) {
  const auto& kv = r["kv_cache"];
  std::cout << "KV cache: " << gib(kv["bytes"]) << " GiB, "
            << group_digits(kv["bytes_per_token"].get<std::uint64_t>())
            << " bytes per token per sequence on the busiest GPU";
  if (kv.contains("capacity_tokens")) {
    std::cout << "; room for " << group_digits(kv["capacity_tokens"].get<std::uint64_t>())
              << " tokens = " << kv["concurrent_sequences"] << " sequences of this length at once";
  }
  std::cout << "\n";
  if (r.contains("speed")) {
    const auto& v = r["speed"];
    std::cout << "Speed (estimated): prefill " << fixed(v["prefill_s"].get<double>() * 1000, 0)
              << " ms, then about "
              << group_digits(
                     static_cast<std::uint64_t>(v["decode_tokens_per_s"].get<double>() + 0.5))
              << " tokens/s in all ("
              << group_digits(
                     static_cast<std::uint64_t>(v["per_sequence_tokens_per_s"].get<double>() + 0.5))
              << " per sequence)"
              << (v["launch_bound"].get<bool>() ? ", bound by kernel launches" : "")
              << "; the request about " << fixed(v["request_s"].get<double>(), 1) << " s\n";
  }
  if (r.contains("solution")) {
    for (const auto& [key, value] : r["solution"].items()) {
      if (key != "limited_by") std::cout << key << ": " << value;
    }
    std::cout << " (limited by " << r["solution"]["limited_by"].get<std::string>() << ")\n";
  }
}

// The host RAM and NVMe an offloaded step needs, by component, and its per-step traffic.
void print_offload(const ordered_json& off) {
  table t({"offloaded", "where", "GiB per GPU"});
  for (const auto& [name, bytes] : off["host"].items()) t.row({name, "host RAM", gib(bytes)});
  for (const auto& [name, bytes] : off["nvme"].items()) t.row({name, "NVMe", gib(bytes)});
  std::cout << "\n"
            << t.render() << "per node: " << gib(off["host_bytes_per_node"]) << " GiB host RAM"
            << (off["fits_host_ram"].get<bool>() ? "" : " (over the budget)") << ", "
            << gib(off["nvme_bytes_per_node"]) << " GiB NVMe"
            << (off["fits_nvme"].get<bool>() ? "" : " (over the budget)") << "; per step "
            << fixed(off["per_step"]["pcie_s"].get<double>(), 2) << " s of PCIe copies, "
            << fixed(off["per_step"]["nvme_s"].get<double>(), 2) << " s of NVMe, "
            << fixed(off["per_step"]["cpu_optimizer_s"].get<double>(), 2)
            << " s of CPU optimizer\n";
}

// A verdict as the tables print it.
std::string verdict_text(const ordered_json& verdict) {
  return verdict == "fits" ? "yes" : verdict == "tight" ? "tight" : "no";
}

}  // namespace gpumem::cli
