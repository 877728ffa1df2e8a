#!/usr/bin/env python3
"""Measure real peak GPU memory for validation points (single GPU, Hugging Face models).

Input: a JSON array of points in the validation format (shared/validation/README.md) whose
measured_* fields are null. For every point this script builds the model from `model.config`
with random weights directly on the GPU (no downloads), runs the workload the point describes and
records, over the WHOLE run of a fresh process:

  * torch.cuda.max_memory_allocated()   -> metric "allocated"
  * torch.cuda.max_memory_reserved()    -> metric "reserved"
  * NVML device used memory (polled every ~5 ms in a background thread and sampled at every
    synchronisation point), minus the used memory seen before the process touched CUDA
                                         -> metric "nvml_used"

plus the CUDA context alone (after torch.cuda.init() and a 1-element tensor) and the growth
caused by the first matrix products (cuBLAS / cuBLASLt workspaces), as separate raw numbers.
Each configuration yields three output points, ids suffixed -alloc, -reserved, -nvml.

Every point runs in its own process: by default a fork of this one, made before CUDA is
initialised (torch/transformers/peft are imported once in the parent, which never touches CUDA;
PYTORCH_NVML_BASED_CUDA_CHECK=1 keeps is_available() from initialising the driver), or with
--isolation spawn a fresh interpreter (slower: re-imports everything per point).

The mapping point -> Python-level plan is the pure function plan_for(point) (no torch import),
unit-tested in tools/measure/test_measure.py. --dry-run prints the plans and exits. Workload details
the validation format has no field for travel as assumptions "measure option: KEY=VALUE ..."
(optimizer_impl=foreach|for_loop|fused for AdamW, dropout=P for every dropout key of the model type).
amp_fp16 trains with torch.amp.GradScaler; optimizer "adafactor" is transformers' Adafactor; an
inference point with kv_cache_tokens = prompt + new - 1 generates with a static cache.

Usage:
  python3 tools/measure/measure.py PLAN.json --dry-run
  python3 tools/measure/measure.py PLAN.json --out OUT.json [--start I] [--end J] [--deadline-s S]
  python3 tools/measure/measure.py --combine OUT.json --plan PLAN.json RESULT1.json RESULT2.json ...
  python3 tools/measure/measure.py PLAN.json --from-raw RAW1.jsonl RAW2.jsonl --env-json RUN.log \
      --out OUT.json      # rebuild output points from --raw-log files (later files win per id)

Models with tied embeddings are built on the CPU (random init skipped there; weights drawn on the
GPU after model.to("cuda"); MEASURE_CPU_INIT=1 keeps transformers' CPU init instead): built on the
GPU, transformers allocates an untied lm_head first and frees it on tying, a transient that would
otherwise set the whole-run peak of small inference runs. See validation/README.md.
"""
import argparse
import copy
import json
import os
import sys
import time

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

GIB = float(1 << 30)
STEPS = 3                  # optimizer steps (train) or forward+backward iterations
LR = 1e-5
SGD_MOMENTUM = 0.9
SEED = 1234

# Output key orders (shared/validation/README.md).
POINT_KEYS = ["id", "source", "trust", "model", "workload", "parallel", "gpu", "metric",
              "measured_gib", "measured_host_gib", "kind", "throughput", "assumptions",
              "original_notes"]
MODEL_KEYS = ["name", "family", "config", "params"]
WORKLOAD_KEYS = ["phase", "finetune", "lora", "weights", "compute", "optimizer",
                 "optimizer_state", "micro_batch", "seq_len", "new_tokens", "kv_cache_tokens",
                 "grad_ckpt", "attention", "framework"]
PARALLEL_KEYS = ["method", "gpus", "cpu_offload", "offload", "dp", "tp", "pp", "cp",
                 "sequence_parallel"]
GPU_KEYS = ["name", "memory_gib"]
THROUGHPUT_KEYS = ["tokens_per_s_per_gpu", "tflops_per_gpu", "step_time_s"]
CONFIG_REQUIRED = ["model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
                   "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
                   "tie_word_embeddings", "max_position_embeddings", "mlp_gated"]

METRICS = [("allocated", "alloc"), ("reserved", "reserved"), ("nvml_used", "nvml")]

# transformers class AutoModelForCausalLM resolves to, per model_type (checked at run time).
CAUSAL_LM_CLASS = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
    "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM", "phi3": "Phi3ForCausalLM",
    "phi": "PhiForCausalLM", "gpt2": "GPT2LMHeadModel", "opt": "OPTForCausalLM",
    "gpt_neox": "GPTNeoXForCausalLM", "bloom": "BloomForCausalLM",
    "falcon": "FalconForCausalLM",
}
# Llama-like: the normalised keys are the HF keys.
LLAMA_LIKE = {"llama", "mistral", "qwen2", "gemma", "gemma2", "phi3"}
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
LORA_TARGET_NAMES = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
# Models with fused projections: validation-format target names (by role) -> the module PEFT
# targets. A fused module can only be targeted as a whole, so a target list must cover whole
# groups (shared/validation/README.md: the fused QKV matrix is listed as q_proj, k_proj, v_proj).
FUSED_LORA_TARGETS = {
    "falcon": [(("q_proj", "k_proj", "v_proj"), "query_key_value"), (("o_proj",), "dense"),
               (("up_proj",), "dense_h_to_4h"), (("down_proj",), "dense_4h_to_h")],
    "phi3": [(("q_proj", "k_proj", "v_proj"), "qkv_proj"), (("o_proj",), "o_proj"),
             (("gate_proj", "up_proj"), "gate_up_proj"), (("down_proj",), "down_proj")],
    # GPTNeoXAttention.query_key_value / dense; GPTNeoXMLP.dense_h_to_4h / dense_4h_to_h (PEFT
    # matches a target against the end of a module's name, so "dense" is the attention's only).
    "gpt_neox": [(("q_proj", "k_proj", "v_proj"), "query_key_value"), (("o_proj",), "dense"),
                 (("up_proj",), "dense_h_to_4h"), (("down_proj",), "dense_4h_to_h")],
}
# Config keys holding the dropout probabilities of each model type (set by the `dropout` option).
DROPOUT_KEYS = {
    "gpt2": ("attn_pdrop", "resid_pdrop", "embd_pdrop"),
    "llama": ("attention_dropout",), "mistral": ("attention_dropout",),
    "qwen2": ("attention_dropout",), "gemma": ("attention_dropout",),
    "phi3": ("attention_dropout", "resid_pdrop", "embd_pdrop"),
    "opt": ("dropout", "attention_dropout"),
    "falcon": ("attention_dropout", "hidden_dropout"),
}
# Workload details the validation format has no field for travel as assumptions of the form
# "measure option: KEY=VALUE ..." (the value ends at the first blank); plan_for reads them.
OPTION_PREFIX = "measure option: "
ADAMW_IMPLS = ("foreach", "for_loop", "fused")
ADAFACTOR_KWARGS = {"lr": 1e-4, "scale_parameter": False, "relative_step": False,
                    "warmup_init": False}


class PlanError(ValueError):
    """The point asks for something this tool does not measure."""


# --------------------------------------------------------------------------------------------
# Pure planning (no torch)
# --------------------------------------------------------------------------------------------

def hf_config_kwargs(cfg):
    """Normalised validation `config` -> (model_type, HF config kwargs, read-back checks).

    checks maps a config attribute (as readable on the built HF config object) to the value
    it must have; a mismatch makes the run fail rather than measure a different model."""
    if not isinstance(cfg, dict):
        raise PlanError("model.config must be an object")
    missing = [k for k in CONFIG_REQUIRED if k not in cfg]
    if missing:
        raise PlanError("model.config lacks %s" % ", ".join(missing))
    if cfg.get("is_encoder_decoder"):
        raise PlanError("encoder-decoder models are not supported")
    if cfg.get("num_local_experts"):
        raise PlanError("MoE models are not supported")
    mt = cfg["model_type"]
    if mt not in CAUSAL_LM_CLASS:
        raise PlanError("model_type %r not supported" % mt)
    h, L, nh = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    nkv, hd, inter = cfg["num_key_value_heads"], cfg["head_dim"], cfg["intermediate_size"]
    V, tie, maxpos, gated = (cfg["vocab_size"], cfg["tie_word_embeddings"],
                             cfg["max_position_embeddings"], cfg["mlp_gated"])
    kw = {}
    checks = {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": nh,
              "vocab_size": V, "tie_word_embeddings": tie}

    def need(cond, msg):
        if not cond:
            raise PlanError("%s: %s" % (mt, msg))

    if mt in LLAMA_LIKE:
        need(gated, "mlp_gated must be true")
        kw.update(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                  num_key_value_heads=nkv, head_dim=hd, intermediate_size=inter,
                  vocab_size=V, tie_word_embeddings=tie)
        if maxpos is not None:
            kw["max_position_embeddings"] = maxpos
        if mt in ("mistral", "gemma2") and cfg.get("sliding_window") is not None:
            kw["sliding_window"] = cfg["sliding_window"]
        checks.update(num_key_value_heads=nkv, head_dim=hd, intermediate_size=inter)
        if mt == "phi3":
            # Phi3Config has no head_dim field: the model uses hidden_size / heads
            need(hd * nh == h, "head_dim must be hidden_size / num_attention_heads")
            del kw["head_dim"], checks["head_dim"]
    elif mt == "falcon":
        need(not gated, "mlp_gated must be false")
        need(hd * nh == h, "head_dim must be hidden_size / num_attention_heads")
        new_arch = bool(cfg.get("new_decoder_architecture", False))
        mq = bool(cfg.get("multi_query", False))
        if new_arch:
            need(nkv <= nh, "num_key_value_heads must not exceed heads")
        elif mq:
            need(nkv == 1, "multi_query means one K/V head")
        else:
            need(nkv == nh, "without multi_query or the new architecture K/V heads = heads")
        kw.update(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                  vocab_size=V, tie_word_embeddings=tie, ffn_hidden_size=inter,
                  new_decoder_architecture=new_arch, multi_query=mq,
                  parallel_attn=bool(cfg.get("parallel_attn", True)), alibi=False, bias=False)
        if new_arch:
            kw["num_kv_heads"] = nkv
        if maxpos is not None:
            kw["max_position_embeddings"] = maxpos
        checks.update(ffn_hidden_size=inter, head_dim=hd, multi_query=mq,
                      new_decoder_architecture=new_arch, parallel_attn=kw["parallel_attn"])
    elif mt == "phi":
        need(not gated, "mlp_gated must be false")
        need(hd * nh == h, "head_dim must be hidden_size / num_attention_heads")
        kw.update(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                  num_key_value_heads=nkv, intermediate_size=inter, vocab_size=V,
                  tie_word_embeddings=tie)
        if maxpos is not None:
            kw["max_position_embeddings"] = maxpos
        if cfg.get("partial_rotary_factor") is not None:
            kw["partial_rotary_factor"] = cfg["partial_rotary_factor"]
        checks.update(num_key_value_heads=nkv, intermediate_size=inter)
    elif mt == "gpt2":
        need(not gated, "mlp_gated must be false")
        need(nkv == nh and hd * nh == h, "GPT-2 has full multi-head attention, head_dim = h/heads")
        kw.update(n_embd=h, n_layer=L, n_head=nh, n_inner=inter, vocab_size=V,
                  tie_word_embeddings=tie, n_positions=maxpos if maxpos is not None else 1024)
        checks.update(n_inner=inter)
    elif mt == "opt":
        need(not gated, "mlp_gated must be false")
        need(nkv == nh and hd * nh == h, "OPT has full multi-head attention, head_dim = h/heads")
        kw.update(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh, ffn_dim=inter,
                  vocab_size=V, tie_word_embeddings=tie, word_embed_proj_dim=h,
                  do_layer_norm_before=True)
        if maxpos is not None:
            kw["max_position_embeddings"] = maxpos
        checks.update(ffn_dim=inter, word_embed_proj_dim=h)
    elif mt == "gpt_neox":
        need(not gated, "mlp_gated must be false")
        need(nkv == nh and hd * nh == h, "GPT-NeoX has full multi-head attention")
        kw.update(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                  intermediate_size=inter, vocab_size=V, tie_word_embeddings=tie)
        if maxpos is not None:
            kw["max_position_embeddings"] = maxpos
        for k in ("use_parallel_residual", "rotary_pct"):
            if cfg.get(k) is not None:
                kw[k] = cfg[k]
        checks.update(intermediate_size=inter)
    elif mt == "bloom":
        need(not gated, "mlp_gated must be false")
        need(inter == 4 * h, "BLOOM's MLP is fixed at 4*hidden_size")
        need(nkv == nh and hd * nh == h, "BLOOM has full multi-head attention")
        kw.update(hidden_size=h, n_layer=L, n_head=nh, vocab_size=V, tie_word_embeddings=tie)
    return mt, kw, checks


def _int(v, what):
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise PlanError("%s must be a positive integer" % what)
    return v


def point_options(point):
    """The "measure option: KEY=VALUE" assumptions of a point, as a dict (pure)."""
    opts = {}
    for a in point.get("assumptions") or []:
        if isinstance(a, str) and a.startswith(OPTION_PREFIX):
            body = a[len(OPTION_PREFIX):].strip()
            key, sep, val = body.partition("=")
            if not sep or not key.strip() or not val.strip():
                raise PlanError("malformed option %r" % a)
            key, val = key.strip(), val.split()[0]
            if key in opts:
                raise PlanError("option %s given twice" % key)
            opts[key] = val
    unknown = set(opts) - {"optimizer_impl", "dropout", "grad_accumulation", "split_prefill"}
    if unknown:
        raise PlanError("unknown measure option(s) %s" % ", ".join(sorted(unknown)))
    return opts


def plan_for(point):
    """Pure mapping: validation point -> the exact Python-level plan measure.py executes.

    Raises PlanError for points this tool cannot measure (reported and skipped)."""
    if not isinstance(point, dict):
        raise PlanError("point must be an object")
    opts = point_options(point)
    pid = point.get("id")
    model = point.get("model") or {}
    wl = point.get("workload") or {}
    par = point.get("parallel") or {}
    if par.get("method") != "single" or par.get("gpus") != 1:
        raise PlanError("only parallel.method 'single' with gpus 1 is supported (got %r, %r)"
                        % (par.get("method"), par.get("gpus")))
    if par.get("cpu_offload") or par.get("offload"):
        raise PlanError("CPU/NVMe offload is not supported")
    phase = wl.get("phase")
    if phase not in ("train", "forward_backward", "inference", "load"):
        raise PlanError("phase %r not supported" % phase)
    weights = wl.get("weights")
    if weights not in DTYPES:
        raise PlanError("weights %r not supported (no quantisation backends here)" % weights)
    compute = wl.get("compute")
    if compute not in ("fp32", "amp_bf16", "amp_fp16", "pure_bf16", "pure_fp16"):
        raise PlanError("compute %r not supported" % compute)
    kv_tokens = wl.get("kv_cache_tokens")
    if kv_tokens is not None and phase != "inference":
        raise PlanError("preallocated KV caches (kv_cache_tokens) only apply to inference")

    plan = {"id": pid, "phase": phase, "action": None, "model": None,
            "param_dtype": "torch." + DTYPES[weights], "autocast_dtype": None,
            "attn_implementation": None, "grad_ckpt": False, "finetune": None, "lora": None,
            "optimizer": None, "steps": 0, "batch_shape": None, "forward_kwargs": None,
            "generate_kwargs": None, "grad_scaler": None, "dropout": None}

    cfg = model.get("config")
    if phase == "load" and cfg is None:
        if model.get("name") is not None:
            raise PlanError("a load point without config must be the CUDA-context point")
        plan["action"] = "context_only"
        plan["param_dtype"] = None
        return plan
    mt, kw, checks = hf_config_kwargs(cfg)
    if "dropout" in opts:
        if phase not in ("train", "forward_backward"):
            raise PlanError("the dropout option only applies to training")
        try:
            pdrop = float(opts["dropout"])
        except ValueError:
            raise PlanError("dropout option %r is not a number" % opts["dropout"]) from None
        if not 0.0 <= pdrop < 1.0 or mt not in DROPOUT_KEYS:
            raise PlanError("dropout %r not supported for %s" % (opts["dropout"], mt))
        for k in DROPOUT_KEYS[mt]:
            kw[k] = pdrop
            checks[k] = pdrop
        plan_dropout = {k: pdrop for k in DROPOUT_KEYS[mt]}
    else:
        plan_dropout = None
    # Tied-embedding models are built on the CPU and moved with model.to("cuda"): built
    # directly on the GPU, transformers first allocates an untied lm_head that post_init frees
    # again when it ties it (a vocab x hidden transient a checkpoint load does not have).
    build_device = "cpu" if cfg["tie_word_embeddings"] else "cuda"
    plan["model"] = {
        "model_type": mt,
        "build_device": build_device,
        "config_call": "transformers.AutoConfig.for_model(%r, **hf_config_kwargs)" % mt,
        "hf_config_kwargs": kw,
        "checks": checks,
        "build_call": "transformers.AutoModelForCausalLM.from_config(config, dtype=%s, "
                      "attn_implementation=...) %s"
                      % ("torch." + DTYPES[weights],
                         "under torch.device('cuda')" if build_device == "cuda" else
                         "on the CPU, then model.to('cuda') (tied embeddings: no transient "
                         "untied lm_head on the GPU)"),
        "expected_class": CAUSAL_LM_CLASS[mt],
    }

    plan["dropout"] = plan_dropout
    if phase == "load":
        if kv_tokens is not None or opts:
            raise PlanError("load points take no KV cache and no options")
        plan["action"] = "load"
        return plan

    attn = wl.get("attention")
    if attn not in ("eager", "sdpa"):
        raise PlanError("attention %r not supported (eager or sdpa)" % attn)
    plan["attn_implementation"] = attn
    B = _int(wl.get("micro_batch"), "micro_batch")
    s = _int(wl.get("seq_len"), "seq_len")
    plan["batch_shape"] = [B, s]

    if phase == "inference":
        if compute not in ("pure_bf16", "pure_fp16") or DTYPES[weights] != (
                "bfloat16" if compute == "pure_bf16" else "float16"):
            raise PlanError("inference needs 16-bit weights with the matching pure_* compute")
        if wl.get("finetune") is not None or wl.get("optimizer") not in ("none", None):
            raise PlanError("inference points have finetune null and optimizer none")
        n = _int(wl.get("new_tokens"), "new_tokens")
        split = opts.get("split_prefill")
        if set(opts) - {"split_prefill"} or split not in (None, "1") or (split and n < 2):
            raise PlanError("inference points take one measure option, split_prefill=1, and "
                            "only for generate (new_tokens > 1)")
        # generate(cache_implementation='static') sizes the StaticCache to max_length - 1 =
        # prompt + new tokens - 1 (the last generated token is never written to the cache)
        if kv_tokens is not None and (n == 1 or kv_tokens != s + n - 1):
            raise PlanError("kv_cache_tokens is measured only for generate with a static cache "
                            "of prompt + new tokens - 1 (%d)" % (s + n - 1))
        if n == 1:
            plan["action"] = "prefill"
            plan["forward_kwargs"] = {"input_ids": "randint(vocab, %s)" % [B, s],
                                      "use_cache": True, "grad": "torch.no_grad()"}
        else:
            plan["action"] = "generate"
            plan["generate_kwargs"] = {"input_ids": "randint(vocab, %s)" % [B, s],
                                       "attention_mask": "ones(%s)" % [B, s],
                                       "do_sample": False, "max_new_tokens": n,
                                       "min_new_tokens": n, "grad": "torch.no_grad()"}
            if split:
                # the prefill's and the decode's peaks and seconds apart (_PrefillSplit)
                plan["generate_kwargs"]["split_prefill"] = True
            if kv_tokens is not None:
                # StaticCache of max_cache_len = prompt + new tokens - 1 (generate sizes it
                # from max_length); no automatic torch.compile of the decode step
                plan["generate_kwargs"].update(cache_implementation="static",
                                               disable_compile=True,
                                               return_dict_in_generate=True,
                                               expected_max_cache_len=kv_tokens)
        return plan

    # train / forward_backward
    finetune = wl.get("finetune")
    if finetune not in ("full", "lora", "dora"):
        raise PlanError("finetune %r not supported (full, lora, dora)" % finetune)
    if phase == "forward_backward" and finetune != "full":
        raise PlanError("forward_backward points use finetune 'full'")
    gc = wl.get("grad_ckpt")
    if gc not in (True, False):
        raise PlanError("grad_ckpt must be true or false (got %r)" % gc)
    plan["grad_ckpt"] = gc
    plan["finetune"] = finetune
    if compute == "fp32":
        if weights != "fp32":
            raise PlanError("compute fp32 needs fp32 weights")
    elif compute.startswith("amp_"):
        if finetune == "full" and weights != "fp32":
            raise PlanError("amp full fine-tuning keeps fp32 weights (master copies)")
        plan["autocast_dtype"] = "torch." + DTYPES[compute[4:]]
        if compute == "amp_fp16":
            plan["grad_scaler"] = {"call": "torch.amp.GradScaler('cuda')",
                                   "loop": "scaler.scale(loss).backward(); scaler.step(optimizer)"
                                           "; scaler.update()"}
    else:  # pure_*
        want = "bf16" if compute == "pure_bf16" else "fp16"
        if weights != want:
            raise PlanError("%s needs %s weights" % (compute, want))

    if finetune in ("lora", "dora"):
        lo = wl.get("lora") or {}
        r = _int(lo.get("r"), "lora.r")
        targets = lo.get("targets")
        if targets == ["all-linear"]:
            tm = "all-linear"
        elif (isinstance(targets, list) and targets and set(targets) <= LORA_TARGET_NAMES
              and len(set(targets)) == len(targets)):
            if mt in FUSED_LORA_TARGETS:
                tm, left = [], set(targets)
                for group, module in FUSED_LORA_TARGETS[mt]:
                    hit = left & set(group)
                    if hit and hit != set(group):
                        raise PlanError("%s fuses %s into %s: target all of them or none"
                                        % (mt, "/".join(group), module))
                    if hit:
                        tm.append(module)
                        left -= hit
                if left:
                    raise PlanError("%s has no module for %s" % (mt, sorted(left)))
            else:
                tm = list(targets)
        else:
            raise PlanError("lora.targets %r not supported" % (targets,))
        alpha = lo.get("alpha")
        # amp_*: PEFT upcasts the adapters to fp32 (autocast_adapter_dtype=True, its default);
        # pure_*: adapters stay in the base dtype.
        adapter_fp32 = compute.startswith("amp_") or compute == "fp32"
        plan["lora"] = {"peft_call": "peft.get_peft_model(model, LoraConfig(...), "
                                     "autocast_adapter_dtype=%s)" % adapter_fp32,
                        "r": r, "lora_alpha": alpha if alpha is not None else 2 * r,
                        "target_modules": tm, "lora_dropout": 0.0, "bias": "none",
                        "task_type": "CAUSAL_LM", "autocast_adapter_dtype": adapter_fp32,
                        "use_dora": finetune == "dora",
                        "adapter_dtype": "torch.float32" if adapter_fp32
                        else plan["param_dtype"], "base_frozen": True}

    opt = wl.get("optimizer")
    impl = opts.get("optimizer_impl")
    if impl is not None and (phase != "train" or opt not in ("adamw", "adam")
                             or impl not in ADAMW_IMPLS):
        raise PlanError("optimizer_impl %r applies to adamw/adam training (%s)"
                        % (impl, ", ".join(ADAMW_IMPLS)))
    if phase == "forward_backward":
        if opt not in ("none", None):
            raise PlanError("forward_backward has no optimizer")
        plan["optimizer"] = None
        plan["action"] = "forward_backward"
    else:
        if opt in ("adamw", "adam"):
            plan["optimizer"] = {"class": "torch.optim.AdamW" if opt == "adamw"
                                 else "torch.optim.Adam",
                                 "kwargs": {"lr": LR}, "foreach": "default (True on CUDA)"}
            if impl == "for_loop":
                plan["optimizer"]["kwargs"]["foreach"] = False
                plan["optimizer"]["foreach"] = "False (single-tensor for-loop implementation)"
            elif impl == "fused":
                plan["optimizer"]["kwargs"]["fused"] = True
                plan["optimizer"]["foreach"] = "not used (fused=True: fused CUDA kernel)"
            elif impl == "foreach":
                plan["optimizer"]["kwargs"]["foreach"] = True
                plan["optimizer"]["foreach"] = "True (explicit)"
        elif opt == "sgd":
            plan["optimizer"] = {"class": "torch.optim.SGD",
                                 "kwargs": {"lr": LR, "momentum": SGD_MOMENTUM},
                                 "foreach": "default (True on CUDA)"}
        elif opt == "adafactor":
            plan["optimizer"] = {"class": "transformers.optimization.Adafactor",
                                 "kwargs": dict(ADAFACTOR_KWARGS),
                                 "foreach": "not applicable (per-parameter loop)"}
        else:
            raise PlanError("optimizer %r not supported for train (adamw, adam, sgd, adafactor)"
                            % opt)
        plan["action"] = "train"
        # the states follow the trainable parameters' dtype (Adafactor: always fp32, it
        # upcasts 16-bit gradients before it creates its states)
        if opt == "adafactor":
            st = "fp32"
        elif finetune == "full":
            st = "fp32" if weights == "fp32" else weights
        else:
            st = "fp32" if plan["lora"]["autocast_adapter_dtype"] else weights
        want_state = st
        if wl.get("optimizer_state") not in (want_state, None):
            raise PlanError("optimizer_state %r but this setup keeps %s states"
                            % (wl.get("optimizer_state"), want_state))
    plan["steps"] = STEPS
    accumulation = opts.get("grad_accumulation")
    if accumulation is not None:
        if phase != "train" or not accumulation.isdigit() or int(accumulation) < 2:
            raise PlanError("grad_accumulation %r: an integer >= 2, for training" % accumulation)
        # each iteration: N micro-batches' forward + backward, then one optimizer step
        plan["grad_accumulation"] = int(accumulation)
    plan["forward_kwargs"] = {"input_ids": "randint(vocab, %s)" % [B, s], "labels": "input_ids",
                              "use_cache": False,
                              "loop": "loss = model(**kw).loss; loss.backward(); "
                                      "%soptimizer.zero_grad(set_to_none=True)"
                                      % ("optimizer.step(); " if plan["optimizer"] else "")}
    return plan


# --------------------------------------------------------------------------------------------
# Output points (pure)
# --------------------------------------------------------------------------------------------

def _ordered(d, keys):
    out = {k: d.get(k) for k in keys}
    for k, v in d.items():
        if k not in out:
            out[k] = v
    return out


def normalise_point(p):
    p = _ordered(p, POINT_KEYS)
    p["model"] = _ordered(p["model"] or {}, MODEL_KEYS)
    p["workload"] = _ordered(p["workload"] or {}, WORKLOAD_KEYS)
    p["parallel"] = _ordered(p["parallel"] or {}, PARALLEL_KEYS)
    p["gpu"] = _ordered(p["gpu"] or {}, GPU_KEYS)
    if p.get("throughput") is not None:
        p["throughput"] = _ordered(p["throughput"], THROUGHPUT_KEYS)
    return p


def build_text(plan, raw):
    """How the model was built, from what the run recorded (older runs lack build_device)."""
    if plan["model"] is None:
        return "no model built"
    call = ("transformers.AutoModelForCausalLM.from_config(config, dtype=%s, "
            "attn_implementation=%s)" % (plan["param_dtype"], plan["attn_implementation"]))
    dev = raw.get("build_device", "cuda")
    if dev == "cuda":
        text = ("model built from model.config with random weights directly on the GPU: %s "
                "under torch.device('cuda'), transformers' own random init; nothing downloaded"
                % call)
        transient = (raw.get("build_peak_allocated") or 0) - (raw.get("build_allocated") or 0)
        if transient > (64 << 20):
            text += ("; building the tied-embedding model on the GPU allocated a separate "
                     "lm_head that transformers freed when it tied the embeddings: a transient "
                     "of %d bytes (%.3f GiB) that loading a checkpoint does not have. It lies "
                     "below this run's allocated peak (the workload sets that), but the freed "
                     "block stayed in PyTorch's cache, so reserved and nvml_used carry that "
                     "allocation history (the 11 training configurations re-measured with a CPU "
                     "build moved their reserved peak by -0.01 to +1.32 GiB, allocated by at "
                     "most 0.002 GiB)" % (transient, transient / GIB))
        return text
    if raw.get("build_init"):
        return ("model built from model.config on the CPU (%s) with the random init skipped, "
                "moved with model.to('cuda'), then every parameter drawn from normal(0, 0.02) "
                "in place on the GPU (values do not change memory); tied-embedding model, so "
                "no transient untied lm_head on the GPU; nothing downloaded" % call)
    return ("model built from model.config on the CPU with transformers' own random init (%s), "
            "moved with model.to('cuda'); tied-embedding model, so no transient untied lm_head "
            "on the GPU; nothing downloaded" % call)


def make_points(point, plan, raw, env):
    """Three output points (allocated, reserved, nvml_used) for one measured configuration."""
    base_id = point["id"]
    gpu_name = env.get("gpu_name") or point["gpu"].get("name")
    software = ("software: torch %s (CUDA runtime %s), transformers %s, peft %s, accelerate %s, "
                "NVIDIA driver %s (CUDA driver API %s), GPU %s with %s MiB, Python %s"
                % (env.get("torch"), env.get("torch_cuda"), env.get("transformers"),
                   env.get("peft"), env.get("accelerate"), env.get("driver"),
                   env.get("cuda_driver"), gpu_name, env.get("gpu_total_mib"),
                   env.get("python")))
    common = [software, build_text(plan, raw),
              "each configuration measured in a fresh process; peaks cover the whole run: "
              "CUDA init, a 1-element tensor, a probe of two matrix products (256x256 fp32 "
              "and bf16 addmm: creates the cuBLAS/cuBLASLt workspaces the workload would "
              "create anyway), model build, workload"]
    if raw.get("class_name"):
        common.append("transformers class %s, attn_implementation %s, parameter dtype %s"
                      % (raw["class_name"], raw.get("attn_impl"), raw.get("param_dtype")))
    if raw.get("dropouts") and plan.get("dropout"):
        common.append("dropout probabilities (%s set by this plan through the model config, "
                      "every other key the transformers default; model.train() during "
                      "training): %s"
                      % ("/".join(sorted(plan["dropout"])),
                         ", ".join("%s=%s" % kv for kv in sorted(raw["dropouts"].items()))))
    elif raw.get("dropouts"):
        common.append("dropout probabilities (transformers defaults for the model type, "
                      "model.train() during training): %s"
                      % ", ".join("%s=%s" % kv for kv in sorted(raw["dropouts"].items())))
    if raw.get("params") is not None:
        common.append("model.params exact: model.num_parameters() of the built model "
                      "(tied weights counted once%s)"
                      % (", before LoRA adapters" if plan.get("lora") else ""))
    if plan["action"] in ("train", "forward_backward"):
        common.append("%d iterations of: random token ids %s, labels = input ids (causal LM "
                      "loss of transformers), use_cache=False, loss = model(...).loss (logits "
                      "dropped before backward), loss.backward(), %szero_grad(set_to_none=True)"
                      % (plan["steps"], plan["batch_shape"],
                         "optimizer.step(), " if plan["optimizer"] else ""))
        if plan.get("grad_accumulation"):
            common.append("gradient accumulation: each iteration runs %d micro-batches (forward "
                          "and loss.backward(), gradients accumulating) before the optimizer step"
                          % plan["grad_accumulation"])
        if plan["optimizer"]:
            o = plan["optimizer"]
            args = ", ".join("%s=%s" % kv for kv in sorted(o["kwargs"].items()))
            if o["class"] == "transformers.optimization.Adafactor":
                common.append("optimizer %s(%s) (beta1=None: no first moment; factored second "
                              "moment, a row and a column vector per matrix, a full tensor for "
                              "vectors; 16-bit gradients and parameters are upcast to fp32 "
                              "inside step(), so the states are fp32), over the trainable "
                              "parameters only" % (o["class"], args))
            elif o["kwargs"].get("fused"):
                common.append("optimizer %s(%s), fused implementation (one fused CUDA kernel "
                              "over all parameters), over the trainable parameters only"
                              % (o["class"], args))
            elif o["kwargs"].get("foreach") is False:
                common.append("optimizer %s(%s), single-tensor for-loop implementation "
                              "(foreach=False: no multi-tensor temporaries), over the trainable "
                              "parameters only" % (o["class"], args))
            else:
                common.append("optimizer %s(%s), foreach implementation (PyTorch default on "
                              "CUDA), over the trainable parameters only" % (o["class"], args))
            if raw.get("optimizer_state_bytes") is not None:
                common.append("optimizer states held after the run: %d bytes (%s)"
                              % (raw["optimizer_state_bytes"],
                                 raw.get("optimizer_state_dtype") or "none"))
        if plan["autocast_dtype"]:
            common.append("torch.autocast('cuda', dtype=%s) around forward and loss; backward "
                          "outside" % plan["autocast_dtype"])
        if plan.get("grad_scaler"):
            sc = raw.get("grad_scaler_scales")
            common.append("loss scaling: scaler = torch.amp.GradScaler('cuda') (defaults, "
                          "init_scale 65536); scaler.scale(loss).backward(), %sscaler.update()"
                          "; the scale after each iteration was %s (a halved scale means "
                          "that step was skipped for inf/NaN gradients)"
                          % ("scaler.step(optimizer), " if plan["optimizer"] else "", sc))
        if plan["grad_ckpt"]:
            common.append("model.gradient_checkpointing_enable(gradient_checkpointing_kwargs="
                          "{'use_reentrant': False}): every decoder layer recomputed")
        if plan["lora"]:
            lo = plan["lora"]
            common.append("LoRA via PEFT: LoraConfig(r=%d, lora_alpha=%s, target_modules=%r, "
                          "lora_dropout=0.0, bias='none'%s), base frozen, autocast_adapter_dtype="
                          "%s (trainable adapter dtype seen: %s, %s trainable parameters)"
                          % (lo["r"], lo["lora_alpha"], lo["target_modules"],
                             ", use_dora=True" if lo["use_dora"] else "",
                             lo["autocast_adapter_dtype"], raw.get("trainable_dtype"),
                             raw.get("trainable_params")))
            if raw.get("lora_target_modules_found"):
                common.append("modules that received LoRA adapters (last name component): %s"
                              % ", ".join(raw["lora_target_modules_found"]))
        if raw.get("step_time_s") is not None:
            # A step runs every micro-batch of its accumulation.
            per_step = ("micro_batch*seq_len*grad_accumulation" if plan.get("grad_accumulation")
                        else "micro_batch*seq_len")
            common.append("throughput derived: step_time_s = median wall time of iterations 2..%d "
                          "(synchronised, measured while NVML was being polled); "
                          "tokens_per_s_per_gpu = %s/step_time_s" % (plan["steps"], per_step))
    elif plan["action"] == "generate" and plan["generate_kwargs"].get("cache_implementation"):
        g = plan["generate_kwargs"]
        common.append("model.eval(); model.generation_config.disable_compile = True (no "
                      "automatic torch.compile of the decode step); under torch.no_grad(): "
                      "model.generate(input_ids (random, %s), attention_mask=ones, "
                      "do_sample=False, min_new_tokens=max_new_tokens=%d, cache_implementation="
                      "'static', return_dict_in_generate=True): a %s preallocated at the "
                      "first forward for max_cache_len = prompt + new tokens - 1 (generate "
                      "sizes it from max_length; the last generated token is never written to "
                      "the cache; kv_cache_tokens %d; length seen on the cache %s), %s bytes of "
                      "K/V tensors (all layers) in shapes %s; output length checked"
                      % (plan["batch_shape"], g["max_new_tokens"],
                         raw.get("cache_class") or "StaticCache", g["expected_max_cache_len"],
                         raw.get("kv_cache_max_len"), raw.get("kv_cache_bytes"),
                         raw.get("kv_cache_shapes")))
    elif plan["action"] == "generate":
        common.append("model.eval(); under torch.no_grad(): model.generate(input_ids (random, "
                      "%s), attention_mask=ones, do_sample=False, min_new_tokens=max_new_tokens="
                      "%d); default DynamicCache growing on demand (kv_cache_tokens null); "
                      "output length checked" % (plan["batch_shape"],
                                                 plan["generate_kwargs"]["max_new_tokens"]))
    if plan["action"] == "generate" and plan["generate_kwargs"].get("split_prefill"):
        common.append("prefill and decode apart: a LogitsProcessor that returns the scores "
                      "unchanged, called by generate() once per new token and first right after "
                      "the prefill's forward, synchronises there and records the peaks so far "
                      "(prefill_peak_*: build and prefill) and the allocated memory, then "
                      "resets the peak statistics; decode_peak_* are the peaks after that, to "
                      "the end of generate(); measured_gib is the larger. prefill_s: generate() "
                      "entered to that first call; decode_s_per_token: from there to generate()'s "
                      "return, over new tokens - 1 (wall clock, synchronised)")
    if plan["action"] == "prefill":
        common.append("new_tokens 1 = one plain forward pass: model.eval(); under torch.no_grad()"
                      ": out = model(input_ids (random, %s), use_cache=True): full logits "
                      "(batch x seq x vocab) and a DynamicCache of the prompt are live at the "
                      "peak" % (plan["batch_shape"],))
    elif plan["action"] == "load":
        common.append("load: measured_gib is the memory after the model build finished "
                      "(steady state, synchronised); the whole-run peaks are in original_notes")
    elif plan["action"] == "context_only":
        common.append("no model: CUDA context only (torch.cuda.init(); torch.ones(1, "
                      "device='cuda')); measured_gib taken before the matrix-product probe; "
                      "family 'none', params 0; weights/compute fp32 are placeholders")
    common.append("framework 'transformers': a plain PyTorch loop (tools/measure/measure.py) "
                  "around a transformers model")

    metric_text = {
        "allocated": "allocated = torch.cuda.max_memory_allocated() over the whole process "
                     "(never reset)",
        "reserved": "reserved = torch.cuda.max_memory_reserved() over the whole process "
                    "(never reset)",
        "nvml_used": "nvml_used = max over the run of nvmlDeviceGetMemoryInfo().used (polled "
                     "every ~5 ms by a thread and sampled at each synchronisation) minus the "
                     "used memory read before the process initialised CUDA (baseline %s bytes)"
                     % raw.get("nvml_baseline"),
    }
    out = []
    for metric, suffix in METRICS:
        if plan["action"] == "context_only":
            val = {"allocated": raw["ctx_allocated"], "reserved": raw["ctx_reserved"],
                   "nvml_used": raw["ctx_nvml"]}[metric]
        elif plan["action"] == "load":
            val = {"allocated": raw["build_allocated"], "reserved": raw["build_reserved"],
                   "nvml_used": raw["build_nvml"]}[metric]
        else:
            val = {"allocated": raw["peak_allocated"], "reserved": raw["peak_reserved"],
                   "nvml_used": raw["peak_nvml"]}[metric]
        p = copy.deepcopy(point)
        p["id"] = "%s-%s" % (base_id, suffix)
        p["source"] = "gpumem tools/measure/measure.py on %s" % gpu_name
        p["trust"] = "high"
        if plan["action"] == "context_only":
            p["model"]["params"] = 0
        elif raw.get("params") is not None:
            p["model"]["params"] = raw["params"]
        p["gpu"]["name"] = gpu_name
        p["metric"] = metric
        p["measured_gib"] = round(val / GIB, 4)
        p["measured_host_gib"] = None
        p["kind"] = "calibration" if plan["phase"] == "load" else "peak"
        if raw.get("step_time_s") is not None and plan["phase"] == "train":
            st = raw["step_time_s"]
            B, s = plan["batch_shape"]
            tokens = B * s * plan.get("grad_accumulation", 1)
            p["throughput"] = {"tokens_per_s_per_gpu": round(tokens / st, 1),
                               "tflops_per_gpu": None, "step_time_s": round(st, 4)}
        else:
            p["throughput"] = None
        p["assumptions"] = list(point.get("assumptions") or []) + common + [
            metric_text[metric], "unit: bytes / 2^30 (raw bytes in original_notes)"]
        notes = {k: raw.get(k) for k in RAW_NOTE_KEYS if raw.get(k) is not None}
        p["original_notes"] = ("[raw measurement, bytes] " + json.dumps(notes, sort_keys=False))
        out.append(normalise_point(p))
    return out


RAW_NOTE_KEYS = [
    "nvml_baseline", "ctx_nvml", "ctx_allocated", "ctx_reserved", "probe_nvml_growth",
    "probe_allocated", "probe_reserved", "build_allocated", "build_reserved", "build_nvml",
    "build_peak_allocated", "build_peak_reserved", "peak_allocated", "peak_reserved",
    "peak_nvml", "peak_nvml_poll", "end_allocated", "end_reserved", "end_nvml",
    "per_step_peak_allocated", "nvml_samples", "proc_nvml_used", "num_alloc_retries",
    "num_ooms", "params", "trainable_params", "adapter_cast_from", "generated_shape",
    "step_times_s", "build_device", "build_init", "build_s", "wall_s", "peak_rss_kib",
    "grad_scaler_scales", "optimizer_state_bytes", "optimizer_state_dtype", "cache_class",
    "kv_cache_bytes", "kv_cache_shapes", "kv_cache_max_len", "lora_target_modules_found",
    "prefill_peak_allocated", "prefill_peak_reserved", "after_prefill_allocated",
    "decode_peak_allocated", "decode_peak_reserved", "prefill_s", "decode_s_per_token",
]


# --------------------------------------------------------------------------------------------
# Measurement (runs in a fresh process; imports torch lazily)
# --------------------------------------------------------------------------------------------

def _torch_dtype(torch, name):
    return None if name is None else getattr(torch, name.split(".", 1)[1])


class _PrefillSplit:
    """A logits processor generate() calls once per generated token, first right after the
    prefill's forward: there it records the peaks so far (build and prefill) and the prefill's
    seconds, then resets the peaks so that the end of the run reads the decode steps' alone."""

    def __init__(self, torch, sample):
        self.torch, self.sample, self.calls, self.t0, self.t1 = torch, sample, 0, None, None
        self.prefill = None

    def __call__(self, input_ids, scores):
        self.calls += 1
        if self.calls == 1:
            torch = self.torch
            torch.cuda.synchronize()
            self.t1 = time.perf_counter()
            self.sample()
            self.prefill = (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(),
                            torch.cuda.memory_allocated())
            torch.cuda.reset_peak_memory_stats()
        return scores

    def finish(self, raw, new_tokens):
        torch = self.torch
        t2 = time.perf_counter()
        if self.calls != new_tokens or self.prefill is None:
            raise RuntimeError("the logits processor ran %d times for %d new tokens"
                               % (self.calls, new_tokens))
        raw["prefill_peak_allocated"], raw["prefill_peak_reserved"] = self.prefill[:2]
        raw["after_prefill_allocated"] = self.prefill[2]
        raw["decode_peak_allocated"] = torch.cuda.max_memory_allocated()
        raw["decode_peak_reserved"] = torch.cuda.max_memory_reserved()
        raw["prefill_s"] = round(self.t1 - self.t0, 4)
        raw["decode_s_per_token"] = round((t2 - self.t1) / max(new_tokens - 1, 1), 6)


def run_plan(plan):
    """Execute one plan in THIS process (which must not have initialised CUDA). Returns raw."""
    import resource
    import threading
    import pynvml
    t_start = time.time()
    raw = {}
    pynvml.nvmlInit()
    idx = int((os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0] or 0)
    handle = pynvml.nvmlDeviceGetHandleByIndex(idx)

    def used():
        return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)

    baseline = used()
    raw["nvml_baseline"] = baseline
    state = {"max": baseline, "n": 0, "stop": False, "max_sync": baseline}

    def poll():
        while not state["stop"]:
            u = used()
            state["n"] += 1
            if u > state["max"]:
                state["max"] = u
            time.sleep(0.005)

    def sample():
        u = used()
        if u > state["max_sync"]:
            state["max_sync"] = u
        return u

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    import torch
    if torch.cuda._is_in_bad_fork():
        raise RuntimeError("CUDA was initialised in the parent before fork")
    torch.manual_seed(SEED)
    dev = torch.device("cuda")
    torch.cuda.init()
    x = torch.ones(1, device=dev)
    torch.cuda.synchronize()
    raw["ctx_nvml"] = sample() - baseline
    raw["ctx_allocated"] = torch.cuda.memory_allocated()
    raw["ctx_reserved"] = torch.cuda.memory_reserved()
    if plan["action"] == "context_only":
        time.sleep(0.05)
        raw["ctx_nvml"] = max(raw["ctx_nvml"], state["max"] - baseline)
    # probe: first matrix products (cuBLAS handle + workspace, cuBLASLt for the bf16 addmm)
    a = torch.randn(256, 256, device=dev)
    b = a @ a
    ab = a.to(torch.bfloat16)
    bias = torch.zeros(256, device=dev, dtype=torch.bfloat16)
    c = torch.addmm(bias, ab, ab)
    torch.cuda.synchronize()
    del a, b, ab, bias, c
    raw["probe_nvml_growth"] = sample() - baseline - raw["ctx_nvml"]
    raw["probe_allocated"] = torch.cuda.memory_allocated()
    raw["probe_reserved"] = torch.cuda.memory_reserved()

    model = None
    if plan["model"] is not None:
        import transformers
        mp = plan["model"]
        cfg = transformers.AutoConfig.for_model(mp["model_type"], **mp["hf_config_kwargs"])
        bad = {}
        for k, v in mp["checks"].items():
            got = getattr(cfg, k, "<missing>")
            if got != v:
                bad[k] = (got, v)
        if bad:
            raise RuntimeError("config read-back mismatch: %r" % bad)
        dtype = _torch_dtype(torch, plan["param_dtype"])
        kw = {}
        if plan["attn_implementation"]:
            kw["attn_implementation"] = plan["attn_implementation"]
        bdev = torch.device(mp.get("build_device", "cuda"))
        raw["build_device"] = str(bdev)
        t_build = time.time()
        # On the CPU, random init (single-threaded normal_) takes minutes for a few billion
        # parameters: skip it there and draw the weights on the GPU after the move instead.
        skip_init = bdev.type == "cpu" and os.environ.get("MEASURE_CPU_INIT") != "1"
        saved = (torch.Tensor.normal_, torch.Tensor.uniform_)
        if skip_init:
            torch.Tensor.normal_ = lambda self, *a, **k: self
            torch.Tensor.uniform_ = lambda self, *a, **k: self
        try:
            with torch.device(bdev):
                try:
                    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, **kw)
                except TypeError:
                    model = transformers.AutoModelForCausalLM.from_config(
                        cfg, torch_dtype=dtype, **kw)
        finally:
            torch.Tensor.normal_, torch.Tensor.uniform_ = saved
        raw["build_init"] = ("skipped on the CPU; every parameter drawn from normal(0, 0.02) "
                             "in place on the GPU after the move" if skip_init
                             else "transformers' own random init on the %s" % bdev.type)
        if mp["hf_config_kwargs"].get("tie_word_embeddings"):
            emb, head = model.get_input_embeddings(), model.get_output_embeddings()
            if emb.weight is not head.weight:
                raise RuntimeError("tie_word_embeddings true but lm_head is not tied")
        p0 = next(model.parameters())
        if p0.device.type != "cuda":
            model.to(dev)
        if p0.dtype != dtype:
            model.to(dtype)
        if skip_init:
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_(0.0, 0.02)
        torch.cuda.synchronize()
        raw["build_s"] = round(time.time() - t_build, 2)
        raw["class_name"] = type(model).__name__
        if raw["class_name"] != mp["expected_class"]:
            raise RuntimeError("built %s, expected %s" % (raw["class_name"], mp["expected_class"]))
        raw["attn_impl"] = getattr(model.config, "_attn_implementation", None)
        if plan["attn_implementation"] and raw["attn_impl"] != plan["attn_implementation"]:
            raise RuntimeError("attn_implementation is %r" % raw["attn_impl"])
        dts = sorted({str(p.dtype) for p in model.parameters()})
        raw["param_dtype"] = ",".join(dts)
        raw["params"] = int(model.num_parameters())
        raw["dropouts"] = {k: v for k, v in sorted(model.config.to_dict().items())
                           if ("drop" in k) and isinstance(v, (int, float))
                           and not isinstance(v, bool)}
        raw["build_allocated"] = torch.cuda.memory_allocated()
        raw["build_reserved"] = torch.cuda.memory_reserved()
        raw["build_nvml"] = sample() - baseline
        raw["build_peak_allocated"] = torch.cuda.max_memory_allocated()
        raw["build_peak_reserved"] = torch.cuda.max_memory_reserved()

    V = plan["model"]["hf_config_kwargs"]["vocab_size"] if plan["model"] else None
    act = plan["action"]
    if act in ("train", "forward_backward"):
        model.train()
        if plan["grad_ckpt"]:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
        if plan["lora"]:
            import peft
            lo = plan["lora"]
            lcfg = peft.LoraConfig(r=lo["r"], lora_alpha=lo["lora_alpha"],
                                   target_modules=lo["target_modules"], lora_dropout=0.0,
                                   bias="none", task_type="CAUSAL_LM",
                                   use_dora=lo["use_dora"])
            model = peft.get_peft_model(model, lcfg,
                                        autocast_adapter_dtype=lo["autocast_adapter_dtype"])
            model.train()
            raw["lora_target_modules_found"] = sorted(
                {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if hasattr(m, "lora_A")})
        trainable = [p for p in model.parameters() if p.requires_grad]
        raw["trainable_params"] = int(sum(p.numel() for p in trainable))
        if plan["lora"]:
            want = _torch_dtype(torch, plan["lora"]["adapter_dtype"])
            seen = ",".join(sorted({str(p.dtype) for p in trainable}))
            if any(p.dtype != want for p in trainable):
                # PEFT did not produce the planned adapter dtype: cast the adapters explicitly
                raw["adapter_cast_from"] = seen
                for p in trainable:
                    p.data = p.data.to(want)
        raw["trainable_dtype"] = ",".join(sorted({str(p.dtype) for p in trainable}))
        opt = None
        if plan["optimizer"]:
            o = plan["optimizer"]
            if o["class"] == "transformers.optimization.Adafactor":
                from transformers.optimization import Adafactor
                cls = Adafactor
            else:
                cls = {"torch.optim.AdamW": torch.optim.AdamW,
                       "torch.optim.Adam": torch.optim.Adam,
                       "torch.optim.SGD": torch.optim.SGD}[o["class"]]
            opt = cls(trainable, **o["kwargs"])
        scaler = torch.amp.GradScaler("cuda") if plan.get("grad_scaler") else None
        ac_dtype = _torch_dtype(torch, plan["autocast_dtype"])
        B, s = plan["batch_shape"]
        per_step, times, scales = [], [], []
        for _ in range(plan["steps"]):
            ids = torch.randint(0, V, (B, s), device=dev)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(plan.get("grad_accumulation", 1) - 1):  # earlier micro-batches
                with torch.autocast("cuda", dtype=ac_dtype, enabled=ac_dtype is not None):
                    early = model(input_ids=ids, labels=ids, use_cache=False).loss
                (scaler.scale(early) if scaler is not None else early).backward()
                del early
            if ac_dtype is not None:
                with torch.autocast("cuda", dtype=ac_dtype):
                    loss = model(input_ids=ids, labels=ids, use_cache=False).loss
            else:
                loss = model(input_ids=ids, labels=ids, use_cache=False).loss
            if scaler is not None:
                scaler.scale(loss).backward()
                if opt is not None:
                    scaler.step(opt)
                scaler.update()
                scales.append(float(scaler.get_scale()))
            else:
                loss.backward()
                if opt is not None:
                    opt.step()
            if opt is not None:
                opt.zero_grad(set_to_none=True)
            model.zero_grad(set_to_none=True)
            del loss, ids
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            sample()
            per_step.append(torch.cuda.max_memory_allocated())
        raw["per_step_peak_allocated"] = per_step
        raw["step_times_s"] = [round(t, 4) for t in times]
        if scaler is not None:
            raw["grad_scaler_scales"] = scales
        if opt is not None:
            # the states the optimizer holds after the run (also shows a GradScaler that
            # skipped every step: no states)
            nb, dts = 0, set()
            for st in opt.state.values():
                for v in st.values():
                    if torch.is_tensor(v) and v.is_cuda:
                        nb += v.numel() * v.element_size()
                        dts.add(str(v.dtype))
            raw["optimizer_state_bytes"] = nb
            raw["optimizer_state_dtype"] = ",".join(sorted(dts))
        later = sorted(times[1:]) or times
        raw["step_time_s"] = later[len(later) // 2]
    elif act in ("prefill", "generate"):
        model.eval()
        B, s = plan["batch_shape"]
        ids = torch.randint(0, V, (B, s), device=dev)
        with torch.no_grad():
            if act == "prefill":
                out = model(input_ids=ids, use_cache=True)
                torch.cuda.synchronize()
                sample()
                raw["generated_shape"] = list(out.logits.shape)
                del out
            else:
                g = plan["generate_kwargs"]
                pad = model.config.pad_token_id
                if pad is None:
                    pad = 0
                extra = {}
                if g.get("cache_implementation"):
                    extra = {k: g[k] for k in ("cache_implementation", "return_dict_in_generate")}
                    # no automatic torch.compile of the decode step with a static cache
                    model.generation_config.disable_compile = g["disable_compile"]
                # a LogitsProcessor subclass, as generate() merges its processors by type
                split = type("PrefillSplit", (_PrefillSplit, transformers.LogitsProcessor),
                             {})(torch, sample)
                if g.get("split_prefill"):
                    extra["logits_processor"] = transformers.LogitsProcessorList([split])
                torch.cuda.synchronize()
                split.t0 = time.perf_counter()
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     do_sample=False, max_new_tokens=g["max_new_tokens"],
                                     min_new_tokens=g["min_new_tokens"], pad_token_id=pad,
                                     **extra)
                torch.cuda.synchronize()
                sample()
                if g.get("split_prefill"):
                    split.finish(raw, g["max_new_tokens"])
                if g.get("cache_implementation"):
                    cache = out.past_key_values
                    out = out.sequences
                    raw["cache_class"] = type(cache).__name__
                    nb, lens, shapes = 0, set(), set()
                    for layer in getattr(cache, "layers", []) or []:
                        for name in ("keys", "values"):
                            t = getattr(layer, name, None)
                            if torch.is_tensor(t):
                                nb += t.numel() * t.element_size()
                                shapes.add(tuple(t.shape))
                        if getattr(layer, "max_cache_len", None) is not None:
                            lens.add(int(layer.max_cache_len))
                    if getattr(cache, "max_cache_len", None) is not None:
                        lens.add(int(cache.max_cache_len))
                    raw["kv_cache_bytes"] = nb
                    raw["kv_cache_shapes"] = sorted(list(x) for x in shapes)
                    raw["kv_cache_max_len"] = sorted(lens)
                    del cache
                raw["generated_shape"] = list(out.shape)
                if out.shape[1] != s + g["max_new_tokens"]:
                    raise RuntimeError("generated %s tokens" % (out.shape[1] - s))
                del out
    torch.cuda.synchronize()
    raw["end_allocated"] = torch.cuda.memory_allocated()
    raw["end_reserved"] = torch.cuda.memory_reserved()
    raw["end_nvml"] = sample() - baseline
    time.sleep(0.02)
    state["stop"] = True
    th.join()
    # a generate split at its prefill reset the peaks there: the whole run's is the larger
    raw["peak_allocated"] = max(torch.cuda.max_memory_allocated(),
                                raw.get("prefill_peak_allocated", 0))
    raw["peak_reserved"] = max(torch.cuda.max_memory_reserved(),
                               raw.get("prefill_peak_reserved", 0))
    raw["peak_nvml_poll"] = state["max"] - baseline
    raw["peak_nvml"] = max(state["max"], state["max_sync"]) - baseline
    raw["nvml_samples"] = state["n"]
    st = torch.cuda.memory_stats()
    raw["num_alloc_retries"] = st.get("num_alloc_retries")
    raw["num_ooms"] = st.get("num_ooms")
    try:
        for pr in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if pr.pid == os.getpid():
                raw["proc_nvml_used"] = pr.usedGpuMemory
    except Exception:  # noqa: BLE001 - informational only
        pass
    raw["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    raw["wall_s"] = round(time.time() - t_start, 2)
    del x
    return raw


def child_entry(plan, result_path):
    """Run one plan and write {"ok":..., "raw"/"error":...} to result_path."""
    import traceback
    try:
        raw = run_plan(plan)
        res = {"ok": True, "raw": raw}
    except BaseException as e:  # noqa: BLE001 - report everything, incl. OOM
        res = {"ok": False, "error": "%s: %s" % (type(e).__name__, e),
               "traceback": traceback.format_exc()[-4000:]}
    with open(result_path, "w") as f:
        json.dump(res, f)


def run_isolated(plan, isolation, timeout_s, tmpdir):
    import signal
    import subprocess
    result_path = os.path.join(tmpdir, "result_%d.json" % os.getpid())
    plan_path = os.path.join(tmpdir, "plan.json")
    if os.path.exists(result_path):
        os.remove(result_path)
    t0 = time.time()
    if isolation == "fork":
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child_entry(plan, result_path)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        status = None
        while time.time() - t0 < timeout_s:
            wpid, status = os.waitpid(pid, os.WNOHANG)
            if wpid:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"ok": False, "error": "timeout after %ss" % timeout_s}
    else:
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        try:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--child", plan_path,
                            result_path], timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": "timeout after %ss" % timeout_s}
    if not os.path.exists(result_path):
        return {"ok": False, "error": "child died without a result (killed? signal/OOM)"}
    with open(result_path) as f:
        return json.load(f)


def environment():
    """Software/GPU versions, read without initialising CUDA in this process."""
    import platform
    env = {"python": platform.python_version()}
    import torch
    env["torch"] = torch.__version__
    env["torch_cuda"] = torch.version.cuda
    for mod in ("transformers", "peft", "accelerate"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            env[mod] = None
    import pynvml
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        env["gpu_name"] = name.decode() if isinstance(name, bytes) else name
        env["gpu_total_mib"] = int(pynvml.nvmlDeviceGetMemoryInfo(h).total) >> 20
        drv = pynvml.nvmlSystemGetDriverVersion()
        env["driver"] = drv.decode() if isinstance(drv, bytes) else drv
        v = pynvml.nvmlSystemGetCudaDriverVersion()
        env["cuda_driver"] = "%d.%d" % (v // 1000, (v % 1000) // 10)
    finally:
        pynvml.nvmlShutdown()
    return env


def preload(plans):
    """Import everything the children need, in the parent, without touching CUDA."""
    import importlib
    import torch  # noqa: F401
    import transformers
    for p in plans:
        if p.get("model"):
            mt = p["model"]["model_type"]
            try:
                importlib.import_module("transformers.models.%s.modeling_%s" % (mt, mt))
            except Exception:  # noqa: BLE001
                pass
        if p.get("lora"):
            import peft  # noqa: F401
    getattr(transformers, "AutoModelForCausalLM")
    import torch.cuda
    if torch.cuda.is_initialized():
        raise RuntimeError("CUDA got initialised in the parent; use --isolation spawn")


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", nargs="?", help="JSON array of points (measured_* null)")
    ap.add_argument("--out", help="output JSON array (rewritten after every point)")
    ap.add_argument("--raw-log", help="JSONL with every raw result / error")
    ap.add_argument("--dry-run", action="store_true", help="print plans; never imports torch")
    ap.add_argument("--start", type=int, default=0, help="first index of the input to run")
    ap.add_argument("--end", type=int, default=None, help="one past the last index to run")
    ap.add_argument("--only", default=None,
                    help="comma-separated ids to run, or @FILE with one id per line")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="start no new point after this many seconds")
    ap.add_argument("--timeout-s", type=float, default=150.0, help="per point")
    ap.add_argument("--isolation", choices=["fork", "spawn"], default="fork")
    ap.add_argument("--child", nargs=2, metavar=("PLAN", "RESULT"), help=argparse.SUPPRESS)
    ap.add_argument("--combine", metavar="OUT",
                    help="merge result files (positional input + --results) into OUT")
    ap.add_argument("--plan", help="with --combine: order the points like this plan")
    ap.add_argument("results", nargs="*", help="with --combine / --from-raw: input files")
    ap.add_argument("--from-raw", action="store_true",
                    help="rebuild output points from --raw-log files (positional results, "
                         "later files win per id) for the points of INPUT; needs --env-json")
    ap.add_argument("--env-json", help="with --from-raw: the environment line's JSON (a file "
                                       "holding the 'environment: {...}' line works too)")
    a = ap.parse_intermixed_args(argv)

    if a.child:
        with open(a.child[0]) as f:
            child_entry(json.load(f), a.child[1])
        return 0

    if a.combine:
        files = ([a.input] if a.input else []) + a.results
        return combine(files, a.combine, a.plan)

    with open(a.input) as f:
        points = json.load(f)
    if a.from_raw:
        return from_raw(points, a.results, a.env_json, a.out)
    sel = list(enumerate(points))[a.start:a.end]
    if a.only:
        if a.only.startswith("@"):
            with open(a.only[1:]) as f:
                keep = {ln.strip() for ln in f if ln.strip()}
        else:
            keep = set(a.only.split(","))
        sel = [(i, p) for i, p in sel if p.get("id") in keep]

    plans = []
    for i, p in sel:
        try:
            plans.append((i, p, plan_for(p)))
        except PlanError as e:
            print("SKIP [%d] %s: %s" % (i, p.get("id") if isinstance(p, dict) else p, e),
                  flush=True)
    if a.dry_run:
        for i, p, plan in plans:
            print("[%d] %s" % (i, json.dumps(plan, indent=1)))
        print("%d runnable of %d selected points" % (len(plans), len(sel)))
        return 0

    import tempfile
    t0 = time.time()
    if a.isolation == "fork":
        preload([pl for _, _, pl in plans])
    env = environment()
    print("environment:", json.dumps(env), flush=True)
    out = []
    tmpdir = tempfile.mkdtemp(prefix="measure_")
    rawlog = open(a.raw_log, "a") if a.raw_log else None
    isolation = a.isolation
    for n, (i, p, plan) in enumerate(plans):
        el = time.time() - t0
        if a.deadline_s is not None and el > a.deadline_s:
            print("DEADLINE: stopping before [%d] %s (%.0f s elapsed)" % (i, p["id"], el),
                  flush=True)
            break
        res = run_isolated(plan, isolation, a.timeout_s, tmpdir)
        if (not res.get("ok") and isolation == "fork" and n == 0
                and "initial" in res.get("error", "").lower()):
            print("fork isolation failed (%s); switching to spawn" % res["error"], flush=True)
            isolation = "spawn"
            res = run_isolated(plan, isolation, a.timeout_s, tmpdir)
        if rawlog:
            rawlog.write(json.dumps({"index": i, "id": p["id"], "result": res}) + "\n")
            rawlog.flush()
        if res.get("ok"):
            raw = res["raw"]
            out.extend(make_points(p, plan, raw, env))
            print("OK   [%d] %-58s alloc %7.3f  reserved %7.3f  nvml %7.3f GiB  (%.1f s)"
                  % (i, p["id"], (raw.get("peak_allocated") or 0) / GIB,
                     (raw.get("peak_reserved") or 0) / GIB, (raw.get("peak_nvml") or 0) / GIB,
                     raw.get("wall_s") or 0), flush=True)
        else:
            print("FAIL [%d] %s: %s" % (i, p["id"], res.get("error")), flush=True)
            if res.get("traceback"):
                print(res["traceback"][-1500:], flush=True)
        if a.out:
            write_json(a.out, out)
    print("done: %d output points from %d configurations in %.0f s"
          % (len(out), len(out) // 3, time.time() - t0), flush=True)
    return 0


def read_env(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("environment:"):
                return json.loads(line.split(":", 1)[1])
            if line.startswith("{"):
                return json.loads(line)
    raise ValueError("no environment JSON in %s" % path)


def from_raw(points, raw_files, env_path, out_path):
    """Regenerate output points from raw logs (JSONL of {id, result}); later files win."""
    env = read_env(env_path)
    raws = {}
    for fn in raw_files:
        with open(fn) as f:
            for line in f:
                if line.strip():
                    d = json.loads(line)
                    if d["result"].get("ok"):
                        raws[d["id"]] = d["result"]["raw"]
    out, missing = [], []
    for p in points:
        if p["id"] not in raws:
            missing.append(p["id"])
            continue
        out.extend(make_points(p, plan_for(p), raws[p["id"]], env))
    for m in missing:
        print("no raw result for", m)
    write_json(out_path, out)
    print("wrote %d points (%d configurations) to %s" % (len(out), len(out) // 3, out_path))
    return 0


def combine(files, out_path, plan_path=None):
    by_id = {}
    for fn in files:
        with open(fn) as f:
            for p in json.load(f):
                by_id[p["id"]] = normalise_point(p)
    order = []
    if plan_path:
        with open(plan_path) as f:
            for p in json.load(f):
                for _, suf in METRICS:
                    pid = "%s-%s" % (p["id"], suf)
                    if pid in by_id:
                        order.append(pid)
    order += [k for k in by_id if k not in set(order)]
    write_json(out_path, [by_id[k] for k in order])
    print("wrote %d points to %s" % (len(order), out_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
