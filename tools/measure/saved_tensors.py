#!/usr/bin/env python3
"""Probe what one decoder block keeps for its backward, per token, on a CUDA machine.

A mechanism check, not a validation point: for each case it builds a transformers model from a
config with 1 and with 2 decoder layers (random bf16 weights, all frozen), runs the base model
on `inputs_embeds` that require grad, and reports

  * the allocated-memory growth of the second layer (what stays alive for backward), in bytes
    per token and per hidden unit (B*h), and
  * the tensors autograd saved in that layer (torch.autograd.graph.saved_tensors_hooks), with
    the size of the storage each one keeps alive, so a view of a larger buffer shows as such.

The `-lora-` cases load bf16 weights, put PEFT LoRA adapters (r 16) on the named modules and
run under bf16 autocast: the input then needs no gradient, as in LoRA training.

The `litgpt-pattern` cases run a fused q/k/v attention written here in litgpt's order of
operations (one qkv linear; split, view, transpose; RoPE on a slice, concatenated back; SDPA),
to check whether the fused output outlives the forward beside the roped copies.

Usage: python3 tools/measure/saved_tensors.py [--tokens N] [--json OUT]
"""
import argparse
import json
import sys


def cases():
    # Dimensions from presets/models (transformers config keys), shortened to 1-2 layers.
    llama_gqa = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
                 "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
                 "vocab_size": 32000}
    llama_mha = dict(llama_gqa, num_key_value_heads=32)
    neox = {"model_type": "gpt_neox", "hidden_size": 1024, "intermediate_size": 4096,
            "num_attention_heads": 16, "rotary_pct": 0.25, "vocab_size": 50304,
            "use_parallel_residual": True}
    phi3 = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
            "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064}
    falcon = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
              "multi_query": True, "new_decoder_architecture": False, "parallel_attn": True,
              "bias": False, "vocab_size": 65024}
    return [
        ("llama-gqa-sdpa", llama_gqa, "sdpa"),
        ("llama-gqa-eager", llama_gqa, "eager"),
        ("llama-mha-sdpa", llama_mha, "sdpa"),
        ("gpt-neox-sdpa", neox, "sdpa"),
        ("gpt-neox-eager", neox, "eager"),
        ("phi3-sdpa", phi3, "sdpa"),
        ("falcon-mqa-sdpa", falcon, "sdpa"),
        ("gpt-neox-lora-qkv-amp", neox, "sdpa", ["query_key_value"]),
        ("llama-mha-lora-qv-amp", llama_mha, "sdpa", ["q_proj", "v_proj"]),
        ("falcon-mqa-lora-qkv-amp", falcon, "sdpa", ["query_key_value"]),
        ("litgpt-pattern-mha", {"hidden_size": 2048, "heads": 32, "groups": 32, "rope": 0.5}, None),
        ("litgpt-pattern-gqa", {"hidden_size": 2048, "heads": 32, "groups": 8, "rope": 1.0}, None),
    ]


class Recorder:
    """Saved tensors of one forward, each with the storage it keeps alive."""

    def __init__(self, torch, exclude):
        self.torch = torch
        self.exclude = exclude  # storage pointers of parameters, buffers and the input
        self.rows = []

    def pack(self, t):
        s = t.untyped_storage()
        if s.data_ptr() not in self.exclude:
            self.rows.append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                              "bytes": t.numel() * t.element_size(), "storage": s.nbytes(),
                              "ptr": s.data_ptr()})
        return t

    def unique_storage_bytes(self):
        return sum({r["ptr"]: r["storage"] for r in self.rows}.values())


def litgpt_pattern_block(torch, spec, device):
    """A fused-qkv attention in litgpt's order of operations (litgpt/model.py
    CausalSelfAttention.forward, apply_rope), frozen, no MLP."""
    F = torch.nn.functional
    h, heads, groups = spec["hidden_size"], spec["heads"], spec["groups"]
    hs = h // heads
    n_elem = int(spec["rope"] * hs)
    qkv = torch.nn.Linear(h, (heads + 2 * groups) * hs, bias=False, device=device,
                          dtype=torch.bfloat16).requires_grad_(False)
    proj = torch.nn.Linear(h, h, bias=False, device=device,
                           dtype=torch.bfloat16).requires_grad_(False)

    def rope(x, cos, sin):
        half = x.size(-1) // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return ((x * cos) + (rotated * sin)).to(x.dtype)

    def forward(x):
        B, T, _ = x.shape
        pos = torch.arange(T, device=device, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, n_elem, 2, device=device).float() / n_elem))
        ang = torch.outer(pos, inv).repeat(1, 2)
        cos, sin = ang.cos()[None], ang.sin()[None]
        out = qkv(x)
        q, k, v = out.split((heads * hs, groups * hs, groups * hs), dim=-1)
        q = q.view(B, T, heads, hs).transpose(1, 2)
        k = k.view(B, T, groups, hs).transpose(1, 2)
        v = v.view(B, T, groups, hs).transpose(1, 2)
        q = torch.cat((rope(q[..., :n_elem], cos, sin), q[..., n_elem:]), dim=-1)
        k = torch.cat((rope(k[..., :n_elem], cos, sin), k[..., n_elem:]), dim=-1)
        if groups != heads:
            k = k.repeat_interleave(heads // groups, dim=1)
            v = v.repeat_interleave(heads // groups, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return proj(y.transpose(1, 2).reshape(B, T, h)) + x

    params = [qkv.weight, proj.weight]
    return forward, params


def run_case(torch, transformers, name, cfg, attn, tokens, device, lora=None):
    batch, seq = 1, tokens
    results = {}
    for layers in (1, 2):
        torch.cuda.empty_cache()
        if attn is None:
            blocks = [litgpt_pattern_block(torch, cfg, device) for _ in range(layers)]
            params = [p for _, ps in blocks for p in ps]
            h = cfg["hidden_size"]

            def run(x, blocks=blocks):
                for f, _ in blocks:
                    x = f(x)
                return x
        else:
            hf = transformers.AutoConfig.for_model(**dict(cfg, num_hidden_layers=layers))
            # LoRA cases: bf16 weights under bf16 autocast, PEFT's adapters on `lora`.
            model = transformers.AutoModelForCausalLM.from_config(
                hf, dtype=torch.bfloat16, attn_implementation=attn).to(device)
            model.requires_grad_(False)
            base = model.base_model
            if lora:
                import peft
                model = peft.get_peft_model(model, peft.LoraConfig(
                    r=16, lora_alpha=32, lora_dropout=0.0, target_modules=lora))
                base = model.base_model.model.base_model
            params = list(model.parameters()) + list(model.buffers())
            h = cfg["hidden_size"]

            def run(x, base=base):
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bool(lora)):
                    return base(inputs_embeds=x, use_cache=False).last_hidden_state
        x = torch.randn(batch, seq, h, device=device, dtype=torch.bfloat16,
                        requires_grad=not lora)
        exclude = {p.untyped_storage().data_ptr() for p in params}
        exclude.add(x.untyped_storage().data_ptr())
        rec = Recorder(torch, exclude)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        with torch.autograd.graph.saved_tensors_hooks(rec.pack, lambda t: t):
            out = run(x)
        torch.cuda.synchronize()
        grown = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
        results[layers] = {"grown": grown, "saved": rec.rows,
                           "saved_storage": rec.unique_storage_bytes()}
        out.sum().backward()  # proves the graph is complete
        del out, x, rec
        if attn is not None:
            del model, base
    per_layer = results[2]["grown"] - results[1]["grown"]
    t = batch * seq
    return {
        "case": name, "tokens": t, "hidden": h,
        "per_layer_bytes": per_layer,
        "per_layer_bytes_per_token_h": per_layer / (t * h),
        "saved_storage_bytes_per_token_h": {
            str(k): v["saved_storage"] / (t * h) for k, v in results.items()},
        "saved_tensors_2_layers": [
            {k: r[k] for k in ("shape", "dtype", "bytes", "storage")} for r in results[2]["saved"]],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--json")
    ap.add_argument("--only", help="comma-separated case names")
    args = ap.parse_args(argv)
    import torch
    import transformers
    device = torch.device("cuda")
    env = {"torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0)}
    print("environment:", json.dumps(env))
    out = []
    for name, cfg, attn, *lora in cases():
        if args.only and name not in args.only.split(","):
            continue
        try:
            r = run_case(torch, transformers, name, cfg, attn, args.tokens, device,
                         lora[0] if lora else None)
        except Exception as e:  # report and go on: one case's API drift is not the others'
            print("FAIL %-22s %s: %s" % (name, type(e).__name__, e))
            continue
        out.append(r)
        print("%-22s per layer %8.2f B*h per token (saved storages: 1 layer %.2f, 2 layers %.2f)"
              % (name, r["per_layer_bytes_per_token_h"],
                 r["saved_storage_bytes_per_token_h"]["1"],
                 r["saved_storage_bytes_per_token_h"]["2"]))
        for s in r["saved_tensors_2_layers"]:
            print("    %-28s %-9s %12d B  storage %12d B (%.2f B*h)"
                  % (s["shape"], s["dtype"], s["bytes"], s["storage"],
                     s["storage"] / (r["tokens"] * r["hidden"])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "cases": out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
