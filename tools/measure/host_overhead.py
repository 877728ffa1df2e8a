#!/usr/bin/env python3
"""How much of an eager step the host costs, and whether measure.py's NVML poller adds to it.

Builds Llama-3.2-1B from presets/models (random bf16 weights, SDPA) on the GPU and times, after
warm-up, each synchronised:
  * generate() decode steps: (generate of 1 + N new tokens - generate of 1) / N, batch 1, a
    128-token prompt, dynamic and static caches;
  * a full fine-tuning step (forward, loss, backward, foreach AdamW, zero_grad) at 1 x 256 tokens;
each with no poller, then with measure.py's poller (a thread reading NVML's used memory every
5 ms), then with none again; and counts, under torch.profiler, the kernels launched per decode
step and per training step (host seconds per kernel = step seconds / kernels when the GPU idles).

Usage: python3 tools/measure/host_overhead.py OUT.json
       python3 tools/measure/host_overhead.py OUT.json --decode-only PRESET BATCH PROMPT
       (decode steps alone, no poller, for another model, batch and prompt length)
"""
import json
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(out_path, preset="meta-llama--Llama-3.2-1B", batch=1, prompt=128, decode_only=False):
    import pynvml
    import torch
    import transformers
    cfg_json = json.load(open(os.path.join(ROOT, "presets", "models",
                                           preset + ".json")))["config"]
    keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "vocab_size", "tie_word_embeddings", "rope_theta",
            "max_position_embeddings", "rms_norm_eps", "head_dim", "rope_scaling")
    cfg = transformers.AutoConfig.for_model("llama", **{k: cfg_json[k] for k in keys
                                                        if k in cfg_json})
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(
            cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    state = {"stop": True}

    def poll():
        while not state["stop"]:
            pynvml.nvmlDeviceGetMemoryInfo(handle)
            time.sleep(0.005)

    def gen(n, cache):
        ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
        extra = {"cache_implementation": "static"} if cache == "static" else {}
        model.generation_config.disable_compile = True
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                           max_new_tokens=n, min_new_tokens=n, pad_token_id=0, **extra)
        torch.cuda.synchronize()
        return time.perf_counter() - t

    def decode_step_s(cache, n=64):
        gen(n + 1, cache)
        gen(1, cache)
        runs = [(gen(n + 1, cache) - gen(1, cache)) / n for _ in range(3)]
        return statistics.median(runs)

    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def train_step():
        ids = torch.randint(0, cfg.vocab_size, (1, 256), device="cuda")
        torch.cuda.synchronize()
        t = time.perf_counter()
        model.train()
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        model.eval()
        return time.perf_counter() - t

    def train_step_s():
        for _ in range(2):
            train_step()
        return statistics.median(train_step() for _ in range(5))

    def measure():
        return {"decode_dynamic_s": decode_step_s("dynamic"),
                "decode_static_s": decode_step_s("static"), "train_step_s": train_step_s()}

    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0), "model": preset, "batch": batch,
           "prompt": prompt}

    def kernels(fn):
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
        return sum(1 for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)

    if decode_only:
        for cache in ("dynamic", "static"):
            out["decode_%s_s" % cache] = decode_step_s(cache, n=32)
            out["kernels_generate_33_%s" % cache] = kernels(lambda: gen(33, cache))
            out["kernels_generate_1_%s" % cache] = kernels(lambda: gen(1, cache))
        print(json.dumps(out, indent=1))
        with open(out_path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        return
    out["no_poller"] = measure()
    state["stop"] = False
    th = threading.Thread(target=poll, daemon=True)
    th.start()
    out["poller"] = measure()
    state["stop"] = True
    th.join()
    out["no_poller_again"] = measure()

    out["kernels_generate_65_dynamic"] = kernels(lambda: gen(65, "dynamic"))
    out["kernels_generate_1_dynamic"] = kernels(lambda: gen(1, "dynamic"))
    out["kernels_generate_65_static"] = kernels(lambda: gen(65, "static"))
    out["kernels_generate_1_static"] = kernels(lambda: gen(1, "static"))
    out["kernels_train_step"] = kernels(train_step)
    print(json.dumps(out, indent=1))
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[2] == "--decode-only":
        main(sys.argv[1], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), decode_only=True)
    else:
        main(sys.argv[1])
