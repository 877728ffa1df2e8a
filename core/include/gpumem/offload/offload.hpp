#pragma once
// The host and NVMe side of an offloaded training step (the GPU side is the replay in
// training_step.cpp with config.offload): what each rank keeps in host RAM (pinned and pageable)
// and on NVMe, the bytes it moves per step over PCIe and to NVMe, and the time that adds. Every
// size and default is sourced in docs/methodology.md ("Offloading").

#include <cstdint>
#include <optional>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/component.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

struct host_footprint {
  std::vector<component> host;  // per rank, in host RAM
  std::vector<component> nvme;  // per rank, on NVMe
  std::uint64_t host_bytes = 0;
  // Of which page-locked: NVMe staging buffers and offloaded activations (copied back
  // asynchronously); DeepSpeed's partitions are pageable unless pin_memory is set.
  std::uint64_t pinned_bytes = 0;
  std::uint64_t nvme_bytes = 0;
  // Per step and rank.
  double pcie_bytes = 0;  // host <-> GPU
  double nvme_read_bytes = 0;
  double nvme_write_bytes = 0;
  double cpu_optimizer_params = 0;
  // Host RAM while the checkpoint is read, before the step runs (checkpoint_load_bytes).
  std::uint64_t load_bytes = 0;     // held by the rank that loads most
  std::uint64_t loading_ranks = 1;  // of a node's ranks, how many hold that much
};

// Host RAM of one rank while the pretrained checkpoint is read: transformers' from_pretrained
// materialises the model on the CPU in its stored dtype (a 4-bit base still 16-bit: bitsandbytes
// quantises on the move to the GPU). Under FSDP, RAM-efficient loading (accelerate's
// FSDP_CPU_RAM_EFFICIENT_LOADING, set by the HF Trainer with FSDP) loads on rank 0 alone, the
// other ranks starting empty and receiving the weights by broadcast (sync_module_states);
// DeepSpeed ZeRO-3 (zero.Init) reads one checkpoint shard file at a time on every rank
// (transformers save_pretrained max_shard_size, 5 GB); otherwise every rank loads all of it.
// Sets f.load_bytes and f.loading_ranks (of `ranks_per_node`).
void checkpoint_load_bytes(const model_spec& spec, const training_config& config,
                           std::uint64_t ranks_per_node, host_footprint& f);

// The host and NVMe side of `config.offload` for one rank, from its replay.
host_footprint offload_footprint(const model_spec& spec, const training_config& config,
                                 const training_estimate& estimate);

// The host RAM a node needs: its ranks' host side during the step, or the checkpoint being
// loaded if that is more.
std::uint64_t host_ram_needed_per_node(const host_footprint& f, std::uint64_t ranks_per_node);

// A node's host RAM or NVMe past 2^53 bytes (one rank's side times the node's ranks), which JSON
// numbers cannot carry exactly: refused as request.too_large rather than rounded.
std::optional<error> check_node_totals(const host_footprint& f, std::uint64_t ranks_per_node);

// Seconds the offload adds to a step that computes for `compute_s`: PCIe copies overlap the
// compute (DeepSpeed overlap_comm and parameter prefetch, FSDP's CPU-offload streams) and count
// only beyond it; NVMe swaps and the CPU optimizer step do not overlap (DeepSpeed's
// pipeline_read / pipeline_write default to false).
double offload_seconds(const host_footprint& f, double compute_s, double host_link_bytes_per_s,
                       const offload_speeds& speeds);

}  // namespace gpumem
