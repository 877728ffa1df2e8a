#!/usr/bin/env python3
"""Write tools/measure/plan_h100.json: the configurations measure.py runs on one H100 80GB.

Model dimensions come from presets/models/*.json (their `config` field, translated to the
normalised keys of the validation format); workloads are chosen to isolate mechanisms an
estimator must model (precision modes, optimizer states, batch and sequence scaling, activation
checkpointing, eager vs SDPA attention, LoRA rank/targets, KV cache growth, logits), not to fit
any formula. Every run is sized to stay well under 70 GiB.

Usage: python3 tools/measure/make_plan.py [OUT]   (default tools/measure/plan_h100.json)
       python3 tools/measure/make_plan.py --batch2|--dora|--ga|--windows|--fused|--layernorm|--generate [OUT]
                                       (default tools/measure/plan_h100_batch2.json and so on:
                                        mechanisms the first batch did not cover)
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRESETS = os.path.join(ROOT, "presets", "models")
GPU = {"name": "NVIDIA H100 80GB HBM3", "memory_gib": 80}

# preset id -> (model.name in the output, family)
MODELS = {
    "gpt2": ("openai-community/gpt2", "gpt2"),
    "facebook/opt-125m": ("facebook/opt-125m", "opt"),
    "facebook/opt-1.3b": ("facebook/opt-1.3b", "opt"),
    "EleutherAI/pythia-410m-deduped": ("EleutherAI/pythia-410m-deduped", "gpt_neox"),
    "bigscience/bloom-560m": ("bigscience/bloom-560m", "bloom"),
    "Qwen/Qwen2.5-0.5B": ("Qwen/Qwen2.5-0.5B", "qwen2"),
    "microsoft/phi-2": ("microsoft/phi-2", "phi"),
    "meta-llama/Llama-3.2-1B": ("meta-llama/Llama-3.2-1B", "llama"),
    "meta-llama/Llama-3.2-3B": ("meta-llama/Llama-3.2-3B", "llama"),
    "meta-llama/Llama-3.1-8B": ("meta-llama/Llama-3.1-8B", "llama"),
    "mistralai/Mistral-7B-v0.1": ("mistralai/Mistral-7B-v0.1", "mistral"),
    "google/gemma-2b": ("google/gemma-2b", "gemma"),
    "microsoft/Phi-3-mini-4k-instruct": ("microsoft/Phi-3-mini-4k-instruct", "phi3"),
    "tiiuae/falcon-7b": ("tiiuae/falcon-7b", "falcon"),
}
SHORT = {
    "gpt2": "gpt2", "facebook/opt-125m": "opt125m", "facebook/opt-1.3b": "opt1.3b",
    "EleutherAI/pythia-410m-deduped": "pythia410m", "bigscience/bloom-560m": "bloom560m",
    "Qwen/Qwen2.5-0.5B": "qwen2.5-0.5b", "microsoft/phi-2": "phi2",
    "meta-llama/Llama-3.2-1B": "llama3.2-1b", "meta-llama/Llama-3.2-3B": "llama3.2-3b",
    "meta-llama/Llama-3.1-8B": "llama3.1-8b", "mistralai/Mistral-7B-v0.1": "mistral7b",
    "google/gemma-2b": "gemma2b", "microsoft/Phi-3-mini-4k-instruct": "phi3-mini",
    "tiiuae/falcon-7b": "falcon7b",
}


def load_preset(pid):
    fn = os.path.join(PRESETS, pid.replace("/", "--") + ".json")
    with open(fn) as f:
        return json.load(f)["config"]


def normalise(c):
    """HF config.json keys -> the validation format's config keys."""
    mt = c["model_type"]
    if mt == "gpt2":
        h, L, nh = c["n_embd"], c["n_layer"], c["n_head"]
        out = dict(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                   num_key_value_heads=nh, head_dim=h // nh,
                   intermediate_size=c.get("n_inner") or 4 * h, vocab_size=c["vocab_size"],
                   tie_word_embeddings=c.get("tie_word_embeddings", True),
                   max_position_embeddings=c["n_positions"], mlp_gated=False)
    elif mt == "opt":
        h, nh = c["hidden_size"], c["num_attention_heads"]
        if c.get("word_embed_proj_dim", h) != h:
            raise ValueError("OPT with word_embed_proj_dim != hidden_size is not representable")
        out = dict(hidden_size=h, num_hidden_layers=c["num_hidden_layers"],
                   num_attention_heads=nh, num_key_value_heads=nh, head_dim=h // nh,
                   intermediate_size=c["ffn_dim"], vocab_size=c["vocab_size"],
                   tie_word_embeddings=c.get("tie_word_embeddings", True),
                   max_position_embeddings=c["max_position_embeddings"], mlp_gated=False)
    elif mt == "bloom":
        h = c["hidden_size"]
        nh = c.get("n_head") or c["num_attention_heads"]
        out = dict(hidden_size=h, num_hidden_layers=c.get("n_layer"), num_attention_heads=nh,
                   num_key_value_heads=nh, head_dim=h // nh, intermediate_size=4 * h,
                   vocab_size=c["vocab_size"],
                   tie_word_embeddings=c.get("tie_word_embeddings", True),
                   max_position_embeddings=None, mlp_gated=False)
    elif mt == "gpt_neox":
        h, nh = c["hidden_size"], c["num_attention_heads"]
        out = dict(hidden_size=h, num_hidden_layers=c["num_hidden_layers"],
                   num_attention_heads=nh, num_key_value_heads=nh, head_dim=h // nh,
                   intermediate_size=c["intermediate_size"], vocab_size=c["vocab_size"],
                   tie_word_embeddings=c.get("tie_word_embeddings", False),
                   max_position_embeddings=c["max_position_embeddings"], mlp_gated=False,
                   use_parallel_residual=c.get("use_parallel_residual", True),
                   rotary_pct=c.get("rotary_pct", 0.25))
    elif mt == "phi":
        h, nh = c["hidden_size"], c["num_attention_heads"]
        out = dict(hidden_size=h, num_hidden_layers=c["num_hidden_layers"],
                   num_attention_heads=nh, num_key_value_heads=c.get("num_key_value_heads") or nh,
                   head_dim=h // nh, intermediate_size=c["intermediate_size"],
                   vocab_size=c["vocab_size"],
                   tie_word_embeddings=c.get("tie_word_embeddings", False),
                   max_position_embeddings=c["max_position_embeddings"], mlp_gated=False,
                   partial_rotary_factor=c["partial_rotary_factor"])
    elif mt in ("llama", "mistral", "qwen2", "gemma", "phi3"):
        h, nh = c["hidden_size"], c["num_attention_heads"]
        out = dict(hidden_size=h, num_hidden_layers=c["num_hidden_layers"],
                   num_attention_heads=nh,
                   num_key_value_heads=c.get("num_key_value_heads") or nh,
                   head_dim=c.get("head_dim") or h // nh,
                   intermediate_size=c["intermediate_size"], vocab_size=c["vocab_size"],
                   # GemmaConfig ties by default (its config.json has no key)
                   tie_word_embeddings=c.get("tie_word_embeddings", mt == "gemma"),
                   max_position_embeddings=c["max_position_embeddings"], mlp_gated=True)
        if mt == "mistral" and c.get("sliding_window") is not None:
            out["sliding_window"] = c["sliding_window"]
    elif mt == "falcon":
        h, nh = c["hidden_size"], c["num_attention_heads"]
        new_arch = c.get("new_decoder_architecture", False)
        mq = c.get("multi_query", True)
        nkv = (c.get("num_kv_heads") or nh) if (new_arch or not mq) else 1
        out = dict(hidden_size=h, num_hidden_layers=c["num_hidden_layers"],
                   num_attention_heads=nh, num_key_value_heads=nkv, head_dim=h // nh,
                   intermediate_size=c.get("ffn_hidden_size") or 4 * h,
                   vocab_size=c["vocab_size"],
                   tie_word_embeddings=c.get("tie_word_embeddings", True),
                   max_position_embeddings=None, mlp_gated=False,
                   parallel_attn=c.get("parallel_attn", True), multi_query=mq)
        if new_arch:
            out["new_decoder_architecture"] = True
    else:
        raise ValueError(mt)
    return dict(model_type=mt, **out)


def point(pid, model, phase, *, finetune=None, lora=None, weights="bf16", compute="pure_bf16",
          optimizer="none", mb=None, seq=None, new=None, ckpt=None, attn="sdpa", notes="",
          kv=None, options=(), extra=()):
    name, family = MODELS[model] if model else (None, "none")
    cfg = normalise(load_preset(model)) if model else None
    if optimizer == "adafactor":
        state = "fp32"  # transformers' Adafactor upcasts 16-bit gradients: fp32 states
    elif optimizer in ("adamw", "adam", "sgd"):
        if finetune in ("lora", "dora"):
            state = "fp32" if compute.startswith("amp_") else weights
        else:
            state = weights
    else:
        state = None
    assumptions = []
    if model:
        assumptions.append("config from presets/models/%s.json (transformers defaults for "
                           "every key the validation format does not carry)"
                           % model.replace("/", "--"))
    if notes:
        assumptions.append("plan note: " + notes)
    assumptions.extend(extra)
    # details the validation format has no field for, read by measure.py's plan_for
    assumptions.extend("measure option: " + o for o in options)
    return {
        "id": pid, "source": None, "trust": "high",
        "model": {"name": name, "family": family, "config": cfg, "params": 0 if not model
                  else None},
        "workload": {"phase": phase, "finetune": finetune, "lora": lora, "weights": weights,
                     "compute": compute, "optimizer": optimizer, "optimizer_state": state,
                     "micro_batch": mb, "seq_len": seq, "new_tokens": new,
                     "kv_cache_tokens": kv, "grad_ckpt": ckpt, "attention": attn,
                     "framework": "transformers"},
        "parallel": {"method": "single", "gpus": 1, "cpu_offload": False, "offload": None,
                     "dp": None, "tp": None, "pp": None, "cp": None, "sequence_parallel": None},
        "gpu": dict(GPU), "metric": None, "measured_gib": None, "measured_host_gib": None,
        "kind": "calibration" if phase == "load" else "peak", "throughput": None,
        "assumptions": assumptions, "original_notes": "",
    }


def full(model, compute, opt, mb, seq, ckpt=False, attn="sdpa", phase="train", notes=""):
    weights = {"fp32": "fp32", "amp_bf16": "fp32", "pure_bf16": "bf16"}[compute]
    tag = "ft" if phase == "train" else "fb"
    pid = "h100-%s-%s-%s-%s-b%d-s%d%s-%s" % (SHORT[model], tag, compute, opt, mb, seq,
                                            "-ckpt" if ckpt else "", attn)
    return point(pid, model, phase, finetune="full", weights=weights, compute=compute,
                 optimizer=opt, mb=mb, seq=seq, ckpt=ckpt, attn=attn, notes=notes)


def lora(model, r, targets, mb, seq, ckpt=False, attn="sdpa", compute="amp_bf16", notes=""):
    tname = "all" if targets == ["all-linear"] else "qv"
    pid = "h100-%s-lora-r%d-%s-%s-b%d-s%d%s-%s" % (SHORT[model], r, tname, compute, mb, seq,
                                                 "-ckpt" if ckpt else "", attn)
    return point(pid, model, "train", finetune="lora",
                 lora={"r": r, "alpha": 2 * r, "targets": targets}, weights="bf16",
                 compute=compute, optimizer="adamw", mb=mb, seq=seq, ckpt=ckpt, attn=attn,
                 notes=notes)


def infer(model, mb, seq, new, attn="sdpa"):
    what = "prefill" if new == 1 else "gen%d" % new
    pid = "h100-%s-infer-%s-b%d-s%d-%s" % (SHORT[model], what, mb, seq, attn)
    return point(pid, model, "inference", weights="bf16", compute="pure_bf16", mb=mb, seq=seq,
                 new=new, attn=attn)


def plan():
    L1, L3, L8 = "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.1-8B"
    M7 = "mistralai/Mistral-7B-v0.1"
    qv = ["q_proj", "v_proj"]
    al = ["all-linear"]
    pts = [
        # calibration
        point("h100-cuda-context", None, "load", weights="fp32", compute="fp32", attn=None,
              notes="CUDA context only"),
        point("h100-llama3.1-8b-load-bf16", L8, "load", weights="bf16", compute="pure_bf16",
              attn=None, notes="weights only (untied head)"),
        point("h100-llama3.2-1b-load-fp32", L1, "load", weights="fp32", compute="fp32",
              attn=None, notes="weights only (tied head)"),
        # Llama-3.2-1B full fine-tuning: precision x optimizer
        full(L1, "fp32", "adamw", 4, 512),
        full(L1, "amp_bf16", "adamw", 4, 512),
        full(L1, "pure_bf16", "adamw", 4, 512),
        full(L1, "fp32", "sgd", 4, 512),
        full(L1, "amp_bf16", "sgd", 4, 512),
        full(L1, "pure_bf16", "sgd", 4, 512),
        full(L1, "fp32", "none", 4, 512, phase="forward_backward"),
        full(L1, "amp_bf16", "none", 4, 512, phase="forward_backward"),
        # batch / sequence scaling, checkpointing, attention
        full(L1, "amp_bf16", "adamw", 1, 512),
        full(L1, "amp_bf16", "adamw", 8, 512),
        full(L1, "amp_bf16", "adamw", 4, 1024),
        full(L1, "amp_bf16", "adamw", 4, 2048),
        full(L1, "amp_bf16", "adamw", 4, 512, ckpt=True),
        full(L1, "amp_bf16", "adamw", 4, 2048, ckpt=True),
        full(L1, "amp_bf16", "adamw", 4, 512, attn="eager"),
        full(L1, "amp_bf16", "adamw", 1, 2048),
        full(L1, "amp_bf16", "adamw", 1, 2048, attn="eager"),
        # other architectures
        full("gpt2", "fp32", "adamw", 8, 1024, attn="eager"),
        full("gpt2", "fp32", "adamw", 8, 1024),
        full("gpt2", "amp_bf16", "adamw", 8, 1024),
        full("gpt2", "amp_bf16", "adamw", 8, 256),
        full("facebook/opt-125m", "amp_bf16", "adamw", 8, 1024),
        full("facebook/opt-1.3b", "amp_bf16", "adamw", 4, 1024),
        full("EleutherAI/pythia-410m-deduped", "amp_bf16", "adamw", 8, 1024),
        full("bigscience/bloom-560m", "amp_bf16", "adamw", 4, 1024, attn="eager"),
        full("Qwen/Qwen2.5-0.5B", "amp_bf16", "adamw", 8, 1024),
        full("microsoft/phi-2", "pure_bf16", "adamw", 4, 512),
        full(L3, "pure_bf16", "adamw", 4, 1024),
        full(L3, "pure_bf16", "adamw", 4, 1024, ckpt=True),
        full(L3, "amp_bf16", "sgd", 4, 512),
        # LoRA on a bf16 base
        lora(L1, 8, qv, 4, 1024),
        lora(L1, 64, al, 4, 1024),
        lora(L3, 16, qv, 4, 1024),
        lora(L3, 16, al, 4, 1024),
        lora(L8, 16, qv, 1, 1024),
        lora(L8, 16, qv, 1, 1024, attn="eager"),
        lora(L8, 16, qv, 4, 1024),
        lora(L8, 16, qv, 4, 1024, compute="pure_bf16"),
        lora(L8, 64, al, 2, 1024),
        lora(L8, 16, al, 4, 2048, ckpt=True),
        lora(M7, 16, qv, 4, 1024),
        # inference (bf16 weights)
        infer(L1, 1, 2048, 1),
        infer(L1, 8, 2048, 1),
        infer(L1, 1, 512, 128),
        infer(L1, 8, 512, 512),
        infer(L3, 8, 1024, 128),
        infer(L8, 1, 2048, 1),
        infer(L8, 1, 2048, 1, attn="eager"),
        infer(L8, 8, 1024, 1),
        infer(L8, 1, 512, 128),
        infer(L8, 8, 512, 512),
        infer(M7, 8, 1024, 128),
        infer("gpt2", 8, 512, 128),
    ]
    ids = [p["id"] for p in pts]
    assert len(ids) == len(set(ids)), "duplicate ids"
    return pts


# ---- batch 2: mechanisms the first batch did not cover ----------------------------------------

IMPL_TAG = {"for_loop": "forloop", "fused": "fused", "foreach": "foreach"}
IMPL_TEXT = {"for_loop": "(torch.optim.AdamW(..., foreach=False): single-tensor implementation)",
             "fused": "(torch.optim.AdamW(..., fused=True): fused CUDA kernel)",
             "foreach": "(torch.optim.AdamW(..., foreach=True))"}


def full2(model, compute, opt, mb, seq, ckpt=False, attn="sdpa", phase="train", impl=None,
          dropout=None, notes="", extra=(), ga=None):
    weights = {"fp32": "fp32", "amp_bf16": "fp32", "amp_fp16": "fp32",
               "pure_bf16": "bf16"}[compute]
    tag = "ft" if phase == "train" else "fb"
    oname = opt + ("_" + IMPL_TAG[impl] if impl else "")
    pid = "h100-%s-%s-%s-%s-b%d-s%d%s-%s%s" % (
        SHORT[model], tag, compute, oname, mb, seq, "-ckpt" if ckpt else "", attn,
        "" if dropout is None else "-pdrop%s" % dropout) + ("" if ga is None else "-ga%d" % ga)
    options = []
    if ga is not None:
        options.append("grad_accumulation=%d (micro-batches per optimizer step)" % ga)
    if impl:
        options.append("optimizer_impl=%s %s" % (impl, IMPL_TEXT[impl]))
    if dropout is not None:
        options.append("dropout=%s (every dropout probability of the model config)" % dropout)
    return point(pid, model, phase, finetune="full", weights=weights, compute=compute,
                 optimizer=opt, mb=mb, seq=seq, ckpt=ckpt, attn=attn, notes=notes,
                 options=options, extra=extra)


def lora2(model, r, targets, mb, seq, ckpt=False, attn="sdpa", compute="amp_bf16", notes="",
          extra=(), weights="bf16", finetune="lora", ga=None):
    tname = {("all-linear",): "all", ("q_proj", "v_proj"): "qv",
             ("q_proj", "k_proj", "v_proj"): "qkv"}[tuple(targets)]
    pid = "h100-%s-lora-r%d-%s-%s-b%d-s%d%s-%s" % (SHORT[model], r, tname, compute, mb, seq,
                                                 "-ckpt" if ckpt else "", attn)
    if weights != "bf16":
        pid = pid.replace("-lora-", "-%s-lora-" % weights)
    pid = pid.replace("-lora-", "-%s-" % finetune) + ("" if ga is None else "-ga%d" % ga)
    options = [] if ga is None else [
        "grad_accumulation=%d (micro-batches per optimizer step)" % ga]
    return point(pid, model, "train", finetune=finetune,
                 lora={"r": r, "alpha": 2 * r, "targets": targets}, weights=weights,
                 compute=compute, optimizer="adamw", mb=mb, seq=seq, ckpt=ckpt, attn=attn,
                 notes=notes, extra=extra, options=options)


def infer2(model, mb, seq, new, attn="sdpa", dtype="bf16", static=False, notes=""):
    what = "prefill" if new == 1 else "gen%d" % new
    if static:
        what += "-static"
    if dtype != "bf16":
        what += "-" + dtype
    pid = "h100-%s-infer-%s-b%d-s%d-%s" % (SHORT[model], what, mb, seq, attn)
    return point(pid, model, "inference", weights=dtype, compute="pure_" + dtype, mb=mb,
                 seq=seq, new=new, attn=attn, kv=seq + new - 1 if static else None,
                 notes=notes)


def plan_batch2():
    L1, L8 = "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.1-8B"
    G2, P3, F7 = "google/gemma-2b", "microsoft/Phi-3-mini-4k-instruct", "tiiuae/falcon-7b"
    al = ["all-linear"]
    same = "compare with the batch-1 point of the same shape"
    pts = [
        # amp_fp16 with loss scaling (vs batch 1's amp_bf16 23.09 GiB)
        full2(L1, "amp_fp16", "adamw", 4, 512,
              notes="autocast fp16 with torch.amp.GradScaler; " + same + " in amp_bf16"),
        # optimizer implementations and Adafactor
        full2(L1, "amp_bf16", "adamw", 4, 512, impl="for_loop",
              notes="AdamW without the foreach temporaries; " + same + " (foreach default)"),
        full2(L1, "amp_bf16", "adamw", 4, 512, impl="fused", notes="fused AdamW; " + same),
        full2(L1, "amp_bf16", "adafactor", 4, 512,
              notes="transformers.optimization.Adafactor(lr=1e-4, scale_parameter=False, "
                    "relative_step=False, warmup_init=False)"),
        full2(L1, "pure_bf16", "adafactor", 4, 512,
              notes="Adafactor on bf16 parameters: fp32 states and per-parameter fp32 copies"),
        full2(L1, "pure_bf16", "adamw", 4, 512, impl="fused",
              notes="fused AdamW on bf16 parameters and states"),
        # longer sequence, checkpointing on/off
        full2(L1, "amp_bf16", "adamw", 1, 4096),
        full2(L1, "amp_bf16", "adamw", 1, 4096, ckpt=True),
        # big-vocabulary tied model
        full2(G2, "pure_bf16", "adamw", 2, 512,
              notes="256k vocabulary, tied head, head_dim 256, multi-query attention"),
        lora2(G2, 16, al, 4, 1024, notes="256k vocabulary: fp32 logits of 4x1024x256000"),
        # fused projections
        lora2(P3, 16, al, 2, 1024,
              extra=["all-linear on Phi-3 = its fused qkv_proj (3072 -> 9216) and gate_up_proj "
                     "(3072 -> 16384) plus o_proj and down_proj: one adapter per fused matrix"]),
        # parallel attention + MLP block, multi-query, fused QKV
        lora2(F7, 16, ["q_proj", "k_proj", "v_proj"], 2, 512,
              extra=["lora.targets q_proj, k_proj, v_proj = Falcon's fused query_key_value "
                     "matrix (4544 -> (71 + 2) x 64 = 4672): one adapter covers the fused "
                     "matrix (PEFT target_modules ['query_key_value'])"]),
        # fp16 vs bf16 weights, prefill
        infer2(L1, 4, 2048, 1, dtype="fp16", notes="fp16 weights; compare with the bf16 point"),
        infer2(L1, 4, 2048, 1),
        infer2(G2, 4, 2048, 1, notes="256k vocabulary: bf16 logits of 4x2048x256000"),
        # dropout: GPT-2 defaults are 0.1 everywhere (batch 1); here 0.0 and amp + eager
        full2("gpt2", "fp32", "adamw", 8, 1024, attn="eager", dropout=0.0),
        full2("gpt2", "fp32", "adamw", 8, 1024, dropout=0.0),
        full2("gpt2", "amp_bf16", "adamw", 8, 1024, dropout=0.0),
        full2("gpt2", "amp_bf16", "adamw", 8, 1024, attn="eager", dropout=0.1),
        full2("gpt2", "amp_bf16", "adamw", 8, 1024, attn="eager", dropout=0.0),
        # attention dropout on Llama (no optimizer: the activations set the peak)
        full2(L1, "amp_bf16", "none", 4, 512, attn="eager", phase="forward_backward"),
        full2(L1, "amp_bf16", "none", 4, 512, attn="eager", phase="forward_backward",
              dropout=0.1),
        full2(L1, "amp_bf16", "none", 4, 512, phase="forward_backward", dropout=0.1),
        # static (preallocated) KV cache
        infer2(L1, 1, 1024, 128, static=True),
        infer2(L1, 4, 1024, 128, static=True),
        infer2(L8, 1, 1024, 128, static=True),
        infer2(L8, 4, 1024, 128, static=True),
        infer2(L1, 4, 1024, 128, notes="DynamicCache counterpart of the static-cache point"),
        infer2(F7, 1, 2048, 1, notes="multi-query: one K/V head per layer in the cache"),
        # second device run (measured after the first 29)
        full2(L1, "amp_bf16", "adamw", 1, 8192),
        full2(L1, "amp_bf16", "adamw", 1, 8192, ckpt=True),
        infer2(P3, 4, 2048, 1, notes="fused qkv_proj, full multi-head K/V (32 heads of 96)"),
        infer2(G2, 4, 1024, 128, static=True, notes="multi-query (1 K/V head of 256)"),
        infer2(L8, 4, 1024, 128, notes="DynamicCache counterpart of the static-cache point"),
        lora2(L8, 16, ["q_proj", "v_proj"], 4, 1024, compute="amp_fp16", weights="fp16",
              notes="fp16 base, autocast fp16 with torch.amp.GradScaler, fp32 adapters "
                    "(the fp16-GPU recipe); compare with the batch-1 amp_bf16 point"),
    ]
    ids = [p["id"] for p in pts]
    assert len(ids) == len(set(ids)), "duplicate ids"
    return pts


def plan_dora():
    """DoRA (PEFT use_dora) beside LoRA of the same shape, to measure what it adds."""
    L1, Q05 = "meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-0.5B"
    qv, al = ["q_proj", "v_proj"], ["all-linear"]
    pts = []
    for ft in ("lora", "dora"):
        pts += [
            lora2(L1, 8, qv, 1, 512, finetune=ft),
            lora2(L1, 16, al, 2, 1024, finetune=ft),
            lora2(L1, 16, al, 4, 512, compute="pure_bf16", finetune=ft),
            lora2(L1, 16, al, 2, 1024, ckpt=True, finetune=ft),
            lora2(Q05, 8, al, 4, 1024, finetune=ft),
        ]
    return pts


def plan_ga():
    """Gradient accumulation: the earlier micro-batches' gradients live through the next forward."""
    L1, Q05 = "meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-0.5B"
    return [
        full2(L1, "amp_bf16", "adamw", 4, 512, ga=4),
        full2(L1, "pure_bf16", "adamw", 8, 512, ga=2),
        full2(L1, "amp_bf16", "adamw", 2, 1024, ckpt=True, ga=4),
        full2(Q05, "amp_bf16", "adamw", 8, 1024, ga=2),
        lora2(L1, 16, ["all-linear"], 4, 1024, ga=4),
    ]


def plan_windows():
    """Sliding windows under SDPA: under, at and over Mistral-7B-v0.1's 4,096-token window, where
    transformers starts passing a mask (the memory-efficient kernel then keeps it in every layer
    and K/V come repeated to every head)."""
    M, qv = "mistralai/Mistral-7B-v0.1", ["q_proj", "v_proj"]
    return [
        lora2(M, 16, qv, 1, 4064),
        lora2(M, 16, qv, 1, 4096),
        lora2(M, 16, qv, 1, 8192),
        lora2(M, 16, qv, 1, 8192, ckpt=True),
        infer2(M, 1, 4064, 1),
        infer2(M, 1, 8192, 1),
    ]


def plan_fused():
    """Fused q/k/v projections whose values stay a view of the fused output (GPT-NeoX, Phi-3):
    SDPA and eager, full and LoRA (the adapter's sum is then the fused output), checkpointed."""
    N, P3 = "EleutherAI/pythia-410m-deduped", "microsoft/Phi-3-mini-4k-instruct"
    qkv = ["q_proj", "k_proj", "v_proj"]
    return [
        full2(N, "pure_bf16", "adamw", 8, 1024),
        full2(N, "amp_bf16", "adamw", 4, 1024, attn="eager"),
        lora2(N, 16, qkv, 8, 1024),
        lora2(N, 16, ["all-linear"], 8, 1024, ckpt=True),
        lora2(P3, 16, qkv, 4, 1024),
        full2(P3, "pure_bf16", "adamw", 2, 1024),
        lora2(P3, 16, ["all-linear"], 2, 2048, ckpt=True),
    ]


def plan_layernorm():
    """LayerNorm models' LoRA under autocast over a bf16 base: each norm keeps an fp32 copy of its
    input (predicted from the fused batch's GPT-NeoX probe before these ran)."""
    O, B = "facebook/opt-1.3b", "bigscience/bloom-560m"
    return [
        lora2(O, 16, ["q_proj", "v_proj"], 4, 1024),
        lora2(O, 16, ["all-linear"], 4, 1024),
        lora2(B, 16, ["all-linear"], 4, 1024, attn="eager"),
    ]


H200 = {"name": "NVIDIA H200", "memory_gib": 140}


def on_h200(pt):
    """A point of this file's helpers moved to the H200 (141 GB HBM3e; nvidia-smi 143,771 MiB)."""
    pt["id"] = "h200-" + pt["id"][len("h100-"):]
    pt["gpu"] = dict(H200)
    return pt


def gen_h200(model, mb, seq, new, static=False, notes=""):
    """generate() with the prefill's and the decode's peaks and seconds recorded apart."""
    pt = on_h200(infer2(model, mb, seq, new, static=static, notes=notes))
    pt["assumptions"].append("measure option: split_prefill=1 (prefill and decode peaks apart)")
    return pt


def plan_generate():
    """Batch 8, on an H200: transformers' generate() today at batch 1-16 and prompts of 1k-4k
    tokens, dynamic and static caches, grouped-query, multi-query and multi-head models and large
    vocabularies (issue 32 item 5); and LoRA at 8k-32k tokens with checkpointing, where what each
    token keeps (the checkpointed inputs, the logits, the flash kernel's buffers) and the caching
    allocator's cut blocks set the peak (item 4)."""
    L1, L8 = "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.1-8B"
    M, Q05, G2 = "mistralai/Mistral-7B-v0.1", "Qwen/Qwen2.5-0.5B", "google/gemma-2b"
    al = ["all-linear"]
    pts = [
        gen_h200(L8, 1, 1024, 128),
        gen_h200(L8, 16, 1024, 128),
        gen_h200(L8, 16, 1024, 128, static=True),
        gen_h200(L8, 4, 4096, 128),
        gen_h200(L8, 4, 4096, 128, static=True),
        gen_h200(L8, 16, 4096, 128),
        gen_h200(L8, 16, 4096, 128, static=True),
        on_h200(infer2(L8, 16, 4096, 1, notes="plain forward: every position's logits")),
        gen_h200(L1, 16, 4096, 128),
        gen_h200(L1, 16, 4096, 128, static=True),
        gen_h200(Q05, 16, 2048, 256, notes="152k vocabulary, two K/V heads"),
        gen_h200(M, 4, 4000, 256, notes="the prompt and the new tokens cross the 4,096-token "
                                        "sliding window"),
        gen_h200("gpt2", 16, 896, 128, notes="multi-head, learned positions (1,024 at most)"),
        gen_h200(G2, 16, 2048, 128, notes="multi-query, 256k vocabulary"),
        on_h200(lora2(L8, 16, al, 1, 8192, ckpt=True)),
        on_h200(lora2(L8, 16, al, 1, 16384, ckpt=True)),
        on_h200(lora2(L8, 16, al, 1, 32768, ckpt=True)),
        on_h200(lora2(L1, 16, al, 1, 32768, ckpt=True)),
    ]
    ids = [p["id"] for p in pts]
    assert len(ids) == len(set(ids)), "duplicate ids"
    return pts


def main():
    args = sys.argv[1:]
    which = [a for a in args
             if a in ("--batch2", "--dora", "--ga", "--windows", "--fused", "--layernorm",
                      "--generate")]
    args = [a for a in args if a not in which]
    name = {"--batch2": "plan_h100_batch2.json", "--dora": "plan_h100_dora.json",
            "--ga": "plan_h100_ga.json", "--windows": "plan_h100_windows.json",
            "--fused": "plan_h100_fused.json", "--layernorm": "plan_h100_layernorm.json",
            "--generate": "plan_h200_generate.json"}.get(
        which[0] if which else "", "plan_h100.json")
    out = args[0] if args else os.path.join(ROOT, "tools", "measure", name)
    pts = {"--batch2": plan_batch2, "--dora": plan_dora, "--ga": plan_ga,
           "--windows": plan_windows, "--fused": plan_fused,
           "--layernorm": plan_layernorm, "--generate": plan_generate}.get(
        which[0] if which else "", plan)()
    with open(out, "w") as f:
        json.dump(pts, f, indent=1)
        f.write("\n")
    print("wrote %d configurations to %s" % (len(pts), out))


if __name__ == "__main__":
    main()
