"""Writes validation/public_torchtitan.json: the rows of torchtitan's docs/performance.md (Tables 1
and 3, "1D Parallelism (FSDP)", Llama 3.1 8B, local batch size 2, selective activation
checkpointing) that ran without torch.compile or Float8, which gpumem does not model, as peak
points in the validation format of shared/validation/README.md.
Run: python3 tools/public/torchtitan_performance_table.py [OUT.json]
"""
import json
import pathlib
import sys

SOURCE = "https://github.com/pytorch/torchtitan/blob/main/docs/performance.md"
LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False,
            "max_position_embeddings": 131072, "rope_theta": 500000.0, "mlp_gated": True}
# (table, GPUs, TPS/GPU, memory GiB) of the rows "FSDP" without torch.compile or Float8.
ROWS = [(1, 8, 5762, 82.4), (3, 128, 5605, 67.0)]
ASSUMPTIONS = [
    "torchtitan commit 9dec370 (2024-12-26), torch nightly 1963fc8 (2024-12-23), as the page's "
    "version table says",
    "Grand Teton hosts: H100 SXM with 96 GB HBM2e, 8 a host over NVLink, 400 Gb/s RDMA between "
    "hosts (the page)",
    "model: torchtitan's llama3 8B (dim 4096, 32 layers, 32 heads, 8 KV heads, FFN 14336 from "
    "ffn_dim_multiplier 1.3 and multiple_of 1024, vocabulary 128256 of the Llama 3 tokenizer, "
    "untied output), which the Llama-3.1-8B config describes",
    "seq_len 8192: train_configs/llama3_8b.toml (training.seq_len); micro_batch 2: the table's "
    "local batch size",
    "grad_ckpt \"selective\": llama3_8b.toml activation_checkpoint mode selective, "
    "selective_ac_option \"op\"",
    "weights fp32, compute amp_bf16: FSDP2 MixedPrecisionPolicy(param_dtype bf16, reduce_dtype "
    "fp32: training.mixed_precision_param/reduce defaults), fp32 sharded parameters",
    "optimizer adamw, optimizer_state fp32: torch.optim.AdamW, foreach (optimizer.fused default "
    "false at that commit; torchtitan fuses by default since 2025), stated below in gpumem's own "
    "way",
    "measure option: optimizer_impl=foreach",
    "attention sdpa: torchtitan's Llama calls F.scaled_dot_product_attention(is_causal=True), "
    "which takes flash attention in bf16",
    "metric reserved: torchtitan logs memory as torch.cuda max_memory_reserved in GiB "
    "(metrics.py DeviceMemoryMonitor max_reserved_gib); the page reads it at the 90th iteration "
    "and calls readings stable across training",
    "throughput as stated (TPS/GPU); step_time_s derived = local batch x seq_len / TPS",
]


def point(table, gpus, tps, memory):
    return {
        "id": f"torchtitan-perf-t{table}-llama3.1-8b-fsdp{gpus}-sac-op",
        "source": SOURCE,
        "trust": "high",
        "model": {"name": "meta-llama/Llama-3.1-8B", "family": "llama", "config": LLAMA_8B,
                  "params": 8030261248},
        "workload": {"phase": "train", "finetune": "full", "lora": None, "weights": "fp32",
                     "compute": "amp_bf16", "optimizer": "adamw", "optimizer_state": "fp32",
                     "micro_batch": 2, "seq_len": 8192, "new_tokens": None,
                     "kv_cache_tokens": None, "grad_ckpt": "selective", "attention": "sdpa",
                     "framework": "torchtitan"},
        "parallel": {"method": "fsdp_full_shard", "gpus": gpus, "cpu_offload": False,
                     "offload": None, "dp": gpus, "tp": None, "pp": None, "cp": None,
                     "sequence_parallel": None},
        "gpu": {"name": "NVIDIA H100 96GB HBM2e", "memory_gib": 96},
        "metric": "reserved",
        "measured_gib": memory,
        "measured_host_gib": None,
        "kind": "peak",
        "throughput": {"tokens_per_s_per_gpu": float(tps), "tflops_per_gpu": None,
                       "step_time_s": round(2 * 8192 / tps, 3)},
        "assumptions": ASSUMPTIONS,
        "original_notes": f"Table {table}: 1D Parallelism (FSDP). Llama 3.1 8B model. {gpus} GPUs. "
                          "Local batch size 2. Selective activation checkpointing. Row 'FSDP': "
                          f"{tps:,} TPS/GPU, Memory {memory} GiB.",
    }


def main():
    points = [point(*row) for row in ROWS]
    default = pathlib.Path(__file__).resolve().parents[2] / "validation" / "public_torchtitan.json"
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else default
    out.write_text(json.dumps(points, indent=1) + "\n")


if __name__ == "__main__":
    main()
