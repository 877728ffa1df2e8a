"""Writes validation/public_unsloth_context.json: the context-length tables of unsloth's README
(github.com/unslothai/unsloth, "Context length benchmarks") as capacity bounds in the validation
format of shared/validation/README.md. Each row is the longest sequence that trained within a GPU
memory budget, so the estimate should be at most the budget. Run: python3 tools/public/unsloth_context_table.py
"""
import json
import pathlib

SOURCE = "https://github.com/unslothai/unsloth#context-length-benchmarks"
LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False,
            "max_position_embeddings": 131072, "mlp_gated": True}
LLAMA_70B = {"model_type": "llama", "hidden_size": 8192, "num_hidden_layers": 80,
             "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
             "intermediate_size": 28672, "vocab_size": 128256, "tie_word_embeddings": False,
             "max_position_embeddings": 131072, "mlp_gated": True}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# (model name, config, params, budget GiB, unsloth tokens, Hugging Face + FA2 tokens or None: OOM)
ROWS = [("meta-llama/Llama-3.1-8B-Instruct", LLAMA_8B, 8030261248, 8, 2972, None),
        ("meta-llama/Llama-3.1-8B-Instruct", LLAMA_8B, 8030261248, 12, 21848, 932),
        ("meta-llama/Llama-3.1-8B-Instruct", LLAMA_8B, 8030261248, 16, 40724, 2551),
        ("meta-llama/Llama-3.1-8B-Instruct", LLAMA_8B, 8030261248, 24, 78475, 5789),
        ("meta-llama/Llama-3.1-8B-Instruct", LLAMA_8B, 8030261248, 40, 153977, 12264),
        ("meta-llama/Llama-3.1-8B-Instruct", LLAMA_8B, 8030261248, 48, 191728, 15502),
        ("meta-llama/Llama-3.1-8B-Instruct", LLAMA_8B, 8030261248, 80, 342733, 28454),
        ("meta-llama/Llama-3.3-70B-Instruct", LLAMA_70B, 70553706496, 48, 12106, None),
        ("meta-llama/Llama-3.3-70B-Instruct", LLAMA_70B, 70553706496, 80, 89389, 6916)]


def point(name, config, params, budget, tokens, unsloth):
    size = "8b" if config is LLAMA_8B else "70b"
    runner = "unsloth" if unsloth else "hf-fa2"
    assumptions = [
        "row of the README table: 4-bit QLoRA on all linear layers, rank 32, batch size 1, every "
        "sequence padded to this length; the longest that trained within the GPU memory in "
        "the first column, so the footprint is at most that budget",
        "budget read as GiB (an \"80 GB\" GPU has 80 GiB); GPU type not stated (the 70B rows ran "
        "on an 80GB A100, the 48 GB row presumably limited to that budget)",
        "weights nf4_double_quant for unsloth's pre-quantized bnb-4bit models; nf4 for the "
        "Hugging Face baseline (BitsAndBytesConfig's default, no double quantisation)",
        "optimizer adamw_8bit: the README's and notebooks' SFT settings (the table does not say)",
        "compute amp_bf16, grad_ckpt true (unsloth's use_gradient_checkpointing=\"unsloth\"; the "
        "baseline needs checkpointing for these lengths), attention flash (FA2)",
        "unsloth version of the table (December 2024) computed its loss with Apple's Cut Cross "
        "Entropy; today's code chunks it (docs/methodology.md, unsloth profile)",
    ]
    return {
        "id": f"unsloth-readme-llama{size}-{runner}-{budget}gb",
        "source": SOURCE,
        "trust": "medium",
        "model": {"name": name, "family": "llama", "config": config, "params": params},
        "workload": {"phase": "train", "finetune": "qlora",
                     "lora": {"r": 32, "alpha": None, "targets": TARGETS},
                     "weights": "nf4_double_quant" if unsloth else "nf4", "compute": "amp_bf16",
                     "optimizer": "adamw_8bit", "optimizer_state": "int8", "micro_batch": 1,
                     "seq_len": tokens, "new_tokens": None, "kv_cache_tokens": None,
                     "grad_ckpt": True, "attention": "flash",
                     "framework": "unsloth" if unsloth else "hf_trainer"},
        "parallel": {"method": "single", "gpus": 1, "cpu_offload": False, "offload": None,
                     "dp": None, "tp": None, "pp": None, "cp": None, "sequence_parallel": None},
        "gpu": {"name": None, "memory_gib": budget},
        "metric": "nvml_used",
        "measured_gib": budget,
        "measured_host_gib": None,
        "kind": "capacity_upper_bound",
        "throughput": None,
        "assumptions": assumptions,
        "original_notes": f"{budget} GB: {'Unsloth' if unsloth else 'Hugging Face + FA2'} "
                          f"context length {tokens:,} ({name.split('/')[1]}, QLoRA all linear, "
                          "rank 32, batch 1)",
    }


points = []
for name, config, params, budget, unsloth_tokens, hf_tokens in ROWS:
    points.append(point(name, config, params, budget, unsloth_tokens, True))
    if hf_tokens:
        points.append(point(name, config, params, budget, hf_tokens, False))
out = pathlib.Path(__file__).resolve().parents[2] / "validation" / "public_unsloth_context.json"
out.write_text(json.dumps(points, indent=1) + "\n")
print(f"{len(points)} points -> {out}")
