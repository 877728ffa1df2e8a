#!/usr/bin/env python3
"""Golden numbers for gpumem's LLMem mode, derived independently of the C++ core.

The parameter list comes from transformers itself (tests/golden/hf_param_counts.json: every
parameter's name and shape, recorded on the meta device), filtered the way LLMem's
size_estimator.py filters modules: Linear and *Embedding modules count, LayerNorms do not; a
tied LM head appears again at the end. The terms follow ../shared/design/llmem.md and LLMem's
size_estimator.py line by line, in Python floats as LLMem computes them. Gemini's chunk layout
is found by the plain scan of Colossal-AI's search_chunk_configuration (every candidate size).

Usage: python3 tools/golden/llmem_formula.py > tests/golden/llmem.json
"""
import json
import math
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE = 2 * 1024 * 1024
NORM_MARKERS = ("layer_norm", "layernorm", "ln_", "LayerNorm", ".norm.")


def C(b):  # size_estimator.py's per-tensor rounding
    if b % BASE != 0:
        b = int(b / BASE) * BASE + BASE
    return b


def selected_tensors(dump):
    """(numel, last_dim, split) per selected tensor, in order; split = a Linear/Embedding weight."""
    out = []
    for name, shape in dump["tensors"]:
        if any(m in name for m in NORM_MARKERS):
            continue
        out.append((math.prod(shape), shape[-1], len(shape) == 2))
    for name in dump["tied_names"]:
        weight = [s for n, s in dump["tensors"] if "embed_tokens.weight" in n or "wte.weight" in n
                  or "word_embeddings.weight" in n]
        out.append((math.prod(weight[0]), weight[0][-1], True))
    return out


def all_parameters(dump):
    return [(math.prod(shape), shape[-1], len(shape) == 2 and not any(m in name for m in NORM_MARKERS))
            for name, shape in dump["tensors"]]


def fixed_terms(sel, method, n, t, seq, exact=False):
    gpu_n = 1 if method == "cdp" else n
    opt = gathered = head = 0
    for i, (numel, _, split) in enumerate(sel):
        numel = numel // t if split else numel
        b16 = C(numel * 2)
        if i == len(sel) - 1:
            head += b16
            continue
        if method == "adp":
            gathered += C(b16 * (gpu_n - 1) / gpu_n)
        elif method == "dp_tp":
            frac = (gpu_n - t) / gpu_n if exact else (gpu_n - t) / gpu_n - 1 / gpu_n
            gathered += C(b16 * frac)
        opt += 2 * C(numel * 2 * 2 / gpu_n)
    return {"optimizer_states": opt, "gathered_params": gathered, "lm_head_weight": head,
            "input": C(2 * seq * 8)}


def batch_terms(cfg, method, t, batch, seq):
    L, H, E, V, e = cfg["blocks"], cfg["hidden"], cfg["embed"], cfg["vocab"], cfg["logit_bytes"]
    last = E if E != H else H
    acts = 2 * C(batch * seq * E * 2) + (L - 1) * C(batch * seq * H * 2) + C(batch * seq * last * 2)
    logits = C(batch * seq * V * e) + 2 * C(batch * (seq - 1) * V * e)
    tp = 0
    if method in ("tp", "dp_tp"):
        tp = (L - 1) * C(batch * seq * H * 2 * (t - 1) / t)
        if E != H:
            tp += C(batch * seq * E * 2 * (t - 1) / t)
    return {"activations": acts, "logits_and_loss": logits, "tp_gather_buffers": tp}


def unused(sizes, cs):  # search_utils._get_unused_byte
    acc = left = 0
    for s in sizes:
        if s > left:
            acc += left
            left = cs
        left -= s
    return left + acc


def gemini_chunks(numels, dp, search_range=32 * 2**20, min_chunk=32 * 2**20, interval=1024):
    """search_chunk_configuration + register_tensor, by the plain scan."""
    total = sum(numels)
    if total < min_chunk:
        return total, [total], True
    mean = total / len(numels)
    std = math.sqrt(sum((x - mean) ** 2 for x in numels) / len(numels))
    sizes = [x for x in numels if x <= mean + 3 * std]
    start = math.ceil(max(min_chunk, max(sizes)) / interval) * interval
    best, best_waste = start, float("inf")
    for cs in range(start, start + search_range + 1, interval):
        w = unused(sizes, cs)
        if w < best_waste:
            best, best_waste = cs, w
    best += -best % dp
    chunks, fill = [], 0
    for n in numels:
        if chunks and fill + n <= chunks[-1]:
            fill += n
            continue
        chunks.append(n + (-n % dp) if n > best else best)
        fill = n
    return best, chunks, False


def main():
    hf = json.load(open(ROOT / "tests/golden/hf_param_counts.json"))["models"]
    presets = {}
    for entry in json.load(open(ROOT / "presets/models/index.json"))["models"]:
        presets[entry["id"]] = json.load(open(ROOT / "presets/models" / entry["file"]))["config"]
    cases = []
    methods = [("single", 1, 1), ("cdp", 4, 1), ("adp", 2, 1), ("adp", 4, 1), ("adp", 8, 1),
               ("tp", 2, 2), ("tp", 4, 4), ("dp_tp", 4, 2), ("dp_tp", 8, 2), ("dp_tp", 8, 4)]
    models = ["facebook/opt-125m", "facebook/opt-350m", "facebook/opt-1.3b", "facebook/opt-6.7b",
              "bigscience/bloom-560m", "bigscience/bloom-3b", "Salesforce/codegen-350M-nl",
              "Salesforce/codegen-2B-nl", "microsoft/biogpt", "microsoft/BioGPT-Large",
              "bigcode/gpt_bigcode-santacoder", "EleutherAI/gpt-neo-1.3B"]
    for model in models:
        dump = hf[model]["causal_lm"]
        cfg = presets[model]
        hidden = cfg.get("hidden_size") or cfg.get("n_embd")
        shape = {
            "blocks": cfg.get("num_hidden_layers") or cfg.get("n_layer") or cfg.get("num_layers"),
            "hidden": hidden, "embed": cfg.get("word_embed_proj_dim", hidden),
            "vocab": cfg["vocab_size"],
            "logit_bytes": 4 if cfg["model_type"] in ("codegen", "gpt_neo") else 2,
        }
        sel = selected_tensors(dump)
        for method, n, t in methods:
            if any(split and last % t for _, last, split in sel):
                continue  # TP must divide every split dimension
            for batch, seq in ((1, 512), (4, 512), (16, 256)):
                terms = fixed_terms(sel, method, n, t, seq)
                terms.update(batch_terms(shape, method, t, batch, seq))
                cases.append({"model": model, "method": method, "gpus": n, "tp": t,
                              "micro_batch": batch, "seq_len": seq, "components": terms})
        if not any(split and last % 2 for _, last, split in sel):
            exact = fixed_terms(sel, "dp_tp", 8, 2, 512, exact=True)
            cases.append({"model": model, "method": "dp_tp", "gpus": 8, "tp": 2, "micro_batch": 1,
                          "seq_len": 512, "dp_tp_fraction": "exact",
                          "components": {"gathered_params": exact["gathered_params"]}})
    chunk_cases = []
    for model, dp, t in (("facebook/opt-125m", 1, 1), ("facebook/opt-1.3b", 1, 1),
                         ("facebook/opt-1.3b", 4, 1), ("bigscience/bloom-560m", 2, 1),
                         ("facebook/opt-1.3b", 2, 2), ("facebook/opt-1.3b", 1, 4)):
        numels = [n // t if split else n for n, _, split in all_parameters(hf[model]["causal_lm"])]
        size, chunks, gathered = gemini_chunks(numels, dp)
        chunk_cases.append({"model": model, "dp": dp, "tp": t, "chunk_size_elements": size,
                            "chunks": len(chunks), "chunk_elements_total": sum(chunks),
                            "keep_gathered": gathered})
    json.dump({"generated_by": "tools/golden/llmem_formula.py", "cases": cases,
               "gemini": chunk_cases}, fp=__import__("sys").stdout, indent=1)


if __name__ == "__main__":
    main()
