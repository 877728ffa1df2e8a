"""Unit tests for tools/measure/measure.py's pure parts (no torch, no GPU needed).

Run from the repository root:  python3 -m unittest tools/measure/test_measure.py
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import measure  # noqa: E402
from measure import PlanError, plan_for  # noqa: E402

PLAN = os.path.join(HERE, "plan_h100.json")
PLAN2 = os.path.join(HERE, "plan_h100_batch2.json")
PLAN3 = os.path.join(HERE, "plan_h100_dora.json")
PLAN4 = os.path.join(HERE, "plan_h100_ga.json")
PLAN5 = os.path.join(HERE, "plan_h100_windows.json")
PLAN6 = os.path.join(HERE, "plan_h100_fused.json")
PLAN7 = os.path.join(HERE, "plan_h100_layernorm.json")
PLAN8 = os.path.join(HERE, "plan_h200_generate.json")
MEASURED = os.path.join(ROOT, "validation", "measured_h100.json")
MEASURED2 = os.path.join(ROOT, "validation", "measured_h100_batch2.json")
MEASURED3 = os.path.join(ROOT, "validation", "measured_h100_dora.json")
MEASURED4 = os.path.join(ROOT, "validation", "measured_h100_ga.json")
MEASURED5 = os.path.join(ROOT, "validation", "measured_h100_windows.json")
MEASURED6 = os.path.join(ROOT, "validation", "measured_h100_fused.json")
MEASURED7 = os.path.join(ROOT, "validation", "measured_h100_layernorm.json")
MEASURED8 = os.path.join(ROOT, "validation", "measured_h200_generate.json")
RAW_DIR = os.path.join(ROOT, "validation", "raw_h100")

LLAMA_1B = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
            "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": True,
            "max_position_embeddings": 131072, "mlp_gated": True}
LLAMA_8B = dict(LLAMA_1B, hidden_size=4096, num_hidden_layers=32, head_dim=128,
                intermediate_size=14336, tie_word_embeddings=False)
GPT2 = {"model_type": "gpt2", "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "num_key_value_heads": 12, "head_dim": 64,
        "intermediate_size": 3072, "vocab_size": 50257, "tie_word_embeddings": True,
        "max_position_embeddings": 1024, "mlp_gated": False}
OPT = {"model_type": "opt", "hidden_size": 2048, "num_hidden_layers": 24,
       "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 64,
       "intermediate_size": 8192, "vocab_size": 50272, "tie_word_embeddings": True,
       "max_position_embeddings": 2048, "mlp_gated": False}
GEMMA_2B = {"model_type": "gemma", "hidden_size": 2048, "num_hidden_layers": 18,
            "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
            "intermediate_size": 16384, "vocab_size": 256000, "tie_word_embeddings": True,
            "max_position_embeddings": 8192, "mlp_gated": True}
PHI3 = {"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 96,
        "intermediate_size": 8192, "vocab_size": 32064, "tie_word_embeddings": False,
        "max_position_embeddings": 4096, "mlp_gated": True}
PYTHIA = {"model_type": "gpt_neox", "hidden_size": 1024, "num_hidden_layers": 24,
          "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 64,
          "intermediate_size": 4096, "vocab_size": 50304, "tie_word_embeddings": False,
          "max_position_embeddings": 2048, "mlp_gated": False, "use_parallel_residual": True,
          "rotary_pct": 0.25}
FALCON_7B = {"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32,
             "num_attention_heads": 71, "num_key_value_heads": 1, "head_dim": 64,
             "intermediate_size": 18176, "vocab_size": 65024, "tie_word_embeddings": True,
             "max_position_embeddings": None, "mlp_gated": False, "parallel_attn": True,
             "multi_query": True}
BLOOM = {"model_type": "bloom", "hidden_size": 1024, "num_hidden_layers": 24,
         "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 64,
         "intermediate_size": 4096, "vocab_size": 250880, "tie_word_embeddings": True,
         "max_position_embeddings": None, "mlp_gated": False}


def point(config=LLAMA_1B, name="meta-llama/Llama-3.2-1B", options=(), **wl):
    workload = {"phase": "train", "finetune": "full", "lora": None, "weights": "fp32",
                "compute": "fp32", "optimizer": "adamw", "optimizer_state": "fp32",
                "micro_batch": 4, "seq_len": 512, "new_tokens": None, "kv_cache_tokens": None,
                "grad_ckpt": False, "attention": "sdpa", "framework": "transformers"}
    workload.update(wl)
    return {"id": "t", "source": None, "trust": "high",
            "model": {"name": name, "family": "llama", "config": copy.deepcopy(config),
                      "params": None},
            "workload": workload,
            "parallel": {"method": "single", "gpus": 1, "cpu_offload": False, "offload": None,
                         "dp": None, "tp": None, "pp": None, "cp": None,
                         "sequence_parallel": None},
            "gpu": {"name": "NVIDIA H100 80GB HBM3", "memory_gib": 80}, "metric": None,
            "measured_gib": None, "measured_host_gib": None, "kind": "peak",
            "throughput": None,
            "assumptions": ["measure option: " + o for o in options], "original_notes": ""}


def infer_point(config=LLAMA_1B, mb=1, seq=1024, new=128, dtype="bf16", **wl):
    return point(config, phase="inference", finetune=None, weights=dtype,
                 compute="pure_" + dtype, optimizer="none", optimizer_state=None,
                 micro_batch=mb, seq_len=seq, new_tokens=new, grad_ckpt=None, **wl)


class PlanForTest(unittest.TestCase):
    def test_full_fp32_adamw(self):
        p = plan_for(point())
        self.assertEqual(p["action"], "train")
        self.assertEqual(p["param_dtype"], "torch.float32")
        self.assertIsNone(p["autocast_dtype"])
        self.assertEqual(p["attn_implementation"], "sdpa")
        self.assertEqual(p["optimizer"]["class"], "torch.optim.AdamW")
        self.assertEqual(p["optimizer"]["kwargs"], {"lr": measure.LR})
        self.assertEqual(p["steps"], 3)
        self.assertEqual(p["batch_shape"], [4, 512])
        self.assertFalse(p["grad_ckpt"])
        self.assertIsNone(p["lora"])
        self.assertEqual(p["model"]["expected_class"], "LlamaForCausalLM")
        self.assertEqual(p["model"]["hf_config_kwargs"]["head_dim"], 64)
        self.assertEqual(p["model"]["hf_config_kwargs"]["num_key_value_heads"], 8)
        self.assertNotIn("mlp_gated", p["model"]["hf_config_kwargs"])
        self.assertEqual(p["forward_kwargs"]["use_cache"], False)

    def test_tied_models_build_on_cpu(self):
        self.assertEqual(plan_for(point())["model"]["build_device"], "cpu")
        self.assertEqual(plan_for(point(LLAMA_8B))["model"]["build_device"], "cuda")

    def test_amp_bf16_sgd_ckpt_eager(self):
        p = plan_for(point(compute="amp_bf16", optimizer="sgd", grad_ckpt=True,
                           attention="eager"))
        self.assertEqual(p["param_dtype"], "torch.float32")
        self.assertEqual(p["autocast_dtype"], "torch.bfloat16")
        self.assertEqual(p["optimizer"]["class"], "torch.optim.SGD")
        self.assertEqual(p["optimizer"]["kwargs"]["momentum"], 0.9)
        self.assertTrue(p["grad_ckpt"])
        self.assertEqual(p["attn_implementation"], "eager")

    def test_pure_bf16(self):
        p = plan_for(point(weights="bf16", compute="pure_bf16", optimizer_state="bf16"))
        self.assertEqual(p["param_dtype"], "torch.bfloat16")
        self.assertIsNone(p["autocast_dtype"])
        with self.assertRaises(PlanError):  # states follow the bf16 parameters
            plan_for(point(weights="bf16", compute="pure_bf16", optimizer_state="fp32"))

    def test_forward_backward(self):
        p = plan_for(point(phase="forward_backward", optimizer="none", optimizer_state=None))
        self.assertEqual(p["action"], "forward_backward")
        self.assertIsNone(p["optimizer"])
        self.assertEqual(p["steps"], 3)
        with self.assertRaises(PlanError):
            plan_for(point(phase="forward_backward", optimizer="adamw"))

    def test_lora_amp_and_pure(self):
        lo = {"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"]}
        p = plan_for(point(LLAMA_8B, finetune="lora", lora=lo, weights="bf16",
                           compute="amp_bf16", optimizer_state="fp32"))
        self.assertEqual(p["param_dtype"], "torch.bfloat16")
        self.assertEqual(p["autocast_dtype"], "torch.bfloat16")
        self.assertEqual(p["lora"]["target_modules"], ["q_proj", "v_proj"])
        self.assertEqual(p["lora"]["r"], 16)
        self.assertEqual(p["lora"]["lora_alpha"], 32)
        self.assertEqual(p["lora"]["lora_dropout"], 0.0)
        self.assertTrue(p["lora"]["autocast_adapter_dtype"])
        self.assertEqual(p["lora"]["adapter_dtype"], "torch.float32")
        lo2 = {"r": 64, "alpha": None, "targets": ["all-linear"]}
        p = plan_for(point(LLAMA_8B, finetune="lora", lora=lo2, weights="bf16",
                           compute="pure_bf16", optimizer_state="bf16"))
        self.assertEqual(p["lora"]["target_modules"], "all-linear")
        self.assertEqual(p["lora"]["lora_alpha"], 128)
        self.assertEqual(p["lora"]["adapter_dtype"], "torch.bfloat16")
        self.assertIsNone(p["autocast_dtype"])

    def test_inference(self):
        p = plan_for(point(LLAMA_8B, phase="inference", finetune=None, weights="bf16",
                           compute="pure_bf16", optimizer="none", optimizer_state=None,
                           micro_batch=8, seq_len=512, new_tokens=128, grad_ckpt=None))
        self.assertEqual(p["action"], "generate")
        self.assertEqual(p["generate_kwargs"]["max_new_tokens"], 128)
        self.assertEqual(p["generate_kwargs"]["min_new_tokens"], 128)
        self.assertFalse(p["generate_kwargs"]["do_sample"])
        self.assertEqual(p["batch_shape"], [8, 512])
        p = plan_for(point(LLAMA_8B, phase="inference", finetune=None, weights="bf16",
                           compute="pure_bf16", optimizer="none", optimizer_state=None,
                           micro_batch=1, seq_len=2048, new_tokens=1, grad_ckpt=None))
        self.assertEqual(p["action"], "prefill")
        self.assertIsNone(p["generate_kwargs"])

    def test_load_and_context(self):
        ctx = point(None, None, phase="load", finetune=None, optimizer="none",
                    optimizer_state=None, micro_batch=None, seq_len=None, grad_ckpt=None,
                    attention=None)
        p = plan_for(ctx)
        self.assertEqual(p["action"], "context_only")
        self.assertIsNone(p["model"])
        p = plan_for(point(LLAMA_8B, phase="load", finetune=None, weights="bf16",
                           compute="pure_bf16", optimizer="none", optimizer_state=None,
                           attention=None))
        self.assertEqual(p["action"], "load")
        self.assertEqual(p["param_dtype"], "torch.bfloat16")

    def test_other_architectures(self):
        p = plan_for(point(GPT2, attention="eager"))
        kw = p["model"]["hf_config_kwargs"]
        self.assertEqual((kw["n_embd"], kw["n_layer"], kw["n_head"], kw["n_inner"],
                          kw["n_positions"]), (768, 12, 12, 3072, 1024))
        self.assertEqual(p["model"]["expected_class"], "GPT2LMHeadModel")
        kw = plan_for(point(OPT))["model"]["hf_config_kwargs"]
        self.assertEqual(kw["ffn_dim"], 8192)
        self.assertEqual(kw["word_embed_proj_dim"], 2048)
        kw = plan_for(point(BLOOM, attention="eager"))["model"]["hf_config_kwargs"]
        self.assertEqual((kw["n_layer"], kw["n_head"]), (24, 16))
        self.assertNotIn("max_position_embeddings", kw)
        bad = dict(BLOOM, intermediate_size=3000)
        with self.assertRaises(PlanError):
            plan_for(point(bad))

    def test_unsupported_points(self):
        bad = [
            point(),
            point(weights="nf4"),
            point(finetune="qlora"),
            point(attention="flash"),
            point(attention=None),
            point(phase="pretrain"),
            point(kv_cache_tokens=2048),
            point(grad_ckpt="selective"),
            point(compute="amp_bf16", weights="bf16"),  # amp full fine-tune keeps fp32 masters
            point(optimizer="adamw_8bit"),
            point(dict(LLAMA_1B, model_type="t5", is_encoder_decoder=True)),
            point(dict(LLAMA_1B, mlp_gated=False)),
            point({k: v for k, v in LLAMA_1B.items() if k != "head_dim"}),
        ]
        bad[0]["parallel"] = {"method": "zero3", "gpus": 8}
        for b in bad:
            with self.assertRaises(PlanError, msg=json.dumps(b["workload"])):
                plan_for(b)
        multi = point()
        multi["parallel"]["gpus"] = 2
        with self.assertRaises(PlanError):
            plan_for(multi)

    def test_amp_fp16_uses_grad_scaler(self):
        p = plan_for(point(compute="amp_fp16"))
        self.assertEqual(p["autocast_dtype"], "torch.float16")
        self.assertEqual(p["param_dtype"], "torch.float32")
        self.assertIn("GradScaler", p["grad_scaler"]["call"])
        self.assertIsNone(plan_for(point(compute="amp_bf16"))["grad_scaler"])
        self.assertIsNone(plan_for(point())["grad_scaler"])
        lo = {"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"]}
        p = plan_for(point(LLAMA_8B, finetune="lora", lora=lo, weights="fp16",
                           compute="amp_fp16", optimizer_state="fp32"))
        self.assertEqual(p["param_dtype"], "torch.float16")
        self.assertEqual(p["lora"]["adapter_dtype"], "torch.float32")
        self.assertIsNotNone(p["grad_scaler"])

    def test_optimizer_impl_options(self):
        p = plan_for(point(compute="amp_bf16", options=["optimizer_impl=fused (text)"]))
        self.assertEqual(p["optimizer"]["kwargs"], {"lr": measure.LR, "fused": True})
        p = plan_for(point(compute="amp_bf16", options=["optimizer_impl=for_loop"]))
        self.assertEqual(p["optimizer"]["kwargs"], {"lr": measure.LR, "foreach": False})
        p = plan_for(point(compute="amp_bf16", options=["optimizer_impl=foreach"]))
        self.assertEqual(p["optimizer"]["kwargs"], {"lr": measure.LR, "foreach": True})
        for bad in (point(options=["optimizer_impl=magic"]),
                    point(optimizer="sgd", options=["optimizer_impl=fused"]),
                    point(options=["optimizer_impl=fused", "optimizer_impl=fused"]),
                    point(options=["optimizer_impl"]),
                    point(options=["colour=blue"])):
            with self.assertRaises(PlanError):
                plan_for(bad)

    def test_adafactor(self):
        p = plan_for(point(compute="amp_bf16", optimizer="adafactor"))
        self.assertEqual(p["optimizer"]["class"], "transformers.optimization.Adafactor")
        self.assertEqual(p["optimizer"]["kwargs"],
                         {"lr": 1e-4, "scale_parameter": False, "relative_step": False,
                          "warmup_init": False})
        # Adafactor keeps fp32 states even for bf16 parameters
        plan_for(point(weights="bf16", compute="pure_bf16", optimizer="adafactor",
                       optimizer_state="fp32"))
        with self.assertRaises(PlanError):
            plan_for(point(weights="bf16", compute="pure_bf16", optimizer="adafactor",
                           optimizer_state="bf16"))
        with self.assertRaises(PlanError):
            plan_for(point(optimizer="adafactor", options=["optimizer_impl=fused"]))

    def test_dropout_option(self):
        p = plan_for(point(GPT2, attention="eager", options=["dropout=0.0 (all)"]))
        kw, checks = p["model"]["hf_config_kwargs"], p["model"]["checks"]
        for k in ("attn_pdrop", "resid_pdrop", "embd_pdrop"):
            self.assertEqual(kw[k], 0.0)
            self.assertEqual(checks[k], 0.0)
        self.assertEqual(p["dropout"], {"attn_pdrop": 0.0, "resid_pdrop": 0.0, "embd_pdrop": 0.0})
        p = plan_for(point(phase="forward_backward", optimizer="none", optimizer_state=None,
                           compute="amp_bf16", options=["dropout=0.1"]))
        self.assertEqual(p["model"]["hf_config_kwargs"]["attention_dropout"], 0.1)
        self.assertIsNone(plan_for(point())["dropout"])
        self.assertNotIn("attention_dropout", plan_for(point())["model"]["hf_config_kwargs"])
        for bad in (point(options=["dropout=x"]), point(options=["dropout=1.0"]),
                    point(BLOOM, attention="eager", options=["dropout=0.1"]),
                    infer_point(new=1, options=["dropout=0.1"])):
            with self.assertRaises(PlanError):
                plan_for(bad)

    def test_static_kv_cache(self):
        p = plan_for(infer_point(LLAMA_8B, mb=4, kv_cache_tokens=1024 + 128 - 1))
        g = p["generate_kwargs"]
        self.assertEqual(g["cache_implementation"], "static")
        self.assertTrue(g["disable_compile"])
        self.assertTrue(g["return_dict_in_generate"])
        self.assertEqual(g["expected_max_cache_len"], 1151)
        self.assertNotIn("cache_implementation", plan_for(infer_point())["generate_kwargs"])
        for bad in (infer_point(kv_cache_tokens=1152),           # transformers sizes s + n - 1
                    infer_point(new=1, kv_cache_tokens=1024),     # prefill has no static cache
                    point(kv_cache_tokens=1151)):                 # training
            with self.assertRaises(PlanError):
                plan_for(bad)

    def test_fp16_inference(self):
        p = plan_for(infer_point(mb=4, seq=2048, new=1, dtype="fp16"))
        self.assertEqual(p["param_dtype"], "torch.float16")
        self.assertEqual(p["action"], "prefill")
        with self.assertRaises(PlanError):
            plan_for(point(phase="inference", finetune=None, weights="fp16",
                           compute="pure_bf16", optimizer="none", optimizer_state=None,
                           new_tokens=1, grad_ckpt=None))

    def test_gemma_phi3_falcon_configs(self):
        kw = plan_for(point(GEMMA_2B, weights="bf16", compute="pure_bf16",
                            optimizer_state="bf16"))["model"]
        self.assertEqual(kw["expected_class"], "GemmaForCausalLM")
        self.assertEqual(kw["hf_config_kwargs"]["head_dim"], 256)
        self.assertEqual(kw["build_device"], "cpu")
        m = plan_for(infer_point(PHI3))["model"]
        self.assertEqual(m["expected_class"], "Phi3ForCausalLM")
        self.assertNotIn("head_dim", m["hf_config_kwargs"])  # Phi3Config has no such field
        self.assertNotIn("head_dim", m["checks"])
        with self.assertRaises(PlanError):
            plan_for(infer_point(dict(PHI3, head_dim=128)))
        m = plan_for(infer_point(FALCON_7B))["model"]
        kw = m["hf_config_kwargs"]
        self.assertEqual(m["expected_class"], "FalconForCausalLM")
        self.assertEqual((kw["ffn_hidden_size"], kw["multi_query"], kw["parallel_attn"],
                          kw["new_decoder_architecture"]), (18176, True, True, False))
        self.assertNotIn("num_kv_heads", kw)
        self.assertNotIn("max_position_embeddings", kw)
        self.assertEqual(m["checks"]["head_dim"], 64)
        with self.assertRaises(PlanError):   # multi_query means one K/V head
            plan_for(infer_point(dict(FALCON_7B, num_key_value_heads=8)))
        f40 = dict(FALCON_7B, num_key_value_heads=8, new_decoder_architecture=True)
        self.assertEqual(plan_for(infer_point(f40))["model"]["hf_config_kwargs"]["num_kv_heads"],
                         8)

    def test_fused_lora_targets(self):
        def lo(cfg, targets):
            return point(cfg, finetune="lora", lora={"r": 16, "alpha": 32, "targets": targets},
                         weights="bf16", compute="amp_bf16", optimizer_state="fp32")
        p = plan_for(lo(FALCON_7B, ["q_proj", "k_proj", "v_proj"]))
        self.assertEqual(p["lora"]["target_modules"], ["query_key_value"])
        p = plan_for(lo(PHI3, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                               "down_proj"]))
        self.assertEqual(p["lora"]["target_modules"],
                         ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"])
        self.assertEqual(plan_for(lo(PHI3, ["all-linear"]))["lora"]["target_modules"],
                         "all-linear")
        p = plan_for(lo(PYTHIA, ["q_proj", "k_proj", "v_proj", "o_proj"]))
        self.assertEqual(p["lora"]["target_modules"], ["query_key_value", "dense"])
        for bad in (lo(FALCON_7B, ["q_proj", "v_proj"]), lo(PHI3, ["up_proj"]),
                    lo(FALCON_7B, ["gate_proj"])):
            with self.assertRaises(PlanError):
                plan_for(bad)
        # unfused models keep the names
        p = plan_for(lo(LLAMA_8B, ["q_proj", "v_proj"]))
        self.assertEqual(p["lora"]["target_modules"], ["q_proj", "v_proj"])

    def test_plan_is_pure_and_torch_free(self):
        pt = point()
        before = copy.deepcopy(pt)
        self.assertEqual(plan_for(pt), plan_for(pt))
        self.assertEqual(pt, before)
        self.assertNotIn("torch", sys.modules)


class SplitPrefillTest(unittest.TestCase):
    def test_generate_points_split_their_prefill(self):
        with open(PLAN8) as f:
            pts = json.load(f)
        gens = [plan_for(p) for p in pts if p["workload"]["phase"] == "inference"
                and p["workload"]["new_tokens"] > 1]
        self.assertGreaterEqual(len(gens), 10)
        for g in gens:
            self.assertIs(g["generate_kwargs"]["split_prefill"], True)
        self.assertTrue(all(p["id"].startswith("h200-") and p["gpu"]["name"] == "NVIDIA H200"
                            for p in pts))

    def test_split_refused_for_a_prefill_and_unknown_options(self):
        with open(PLAN8) as f:
            pts = json.load(f)
        one = next(p for p in pts if p["workload"]["new_tokens"] == 1)
        one = copy.deepcopy(one)
        one["assumptions"].append("measure option: split_prefill=1")
        with self.assertRaises(PlanError):
            plan_for(one)
        gen = copy.deepcopy(next(p for p in pts if (p["workload"]["new_tokens"] or 0) > 1))
        gen["assumptions"].append("measure option: dropout=0.1")
        with self.assertRaises(PlanError):
            plan_for(gen)


class PlanFileTest(unittest.TestCase):
    def test_every_planned_point_is_runnable(self):
        seen = set()
        for fn, least in ((PLAN, 40), (PLAN2, 25)):
            with open(fn) as f:
                pts = json.load(f)
            self.assertGreaterEqual(len(pts), least)
            ids = [p["id"] for p in pts]
            self.assertEqual(len(ids), len(set(ids)))
            self.assertFalse(seen & set(ids), "an id is in both batches")
            seen |= set(ids)
            for p in pts:
                plan_for(p)
                self.assertIsNone(p["measured_gib"])
                self.assertEqual(list(p.keys()), measure.POINT_KEYS)

    def test_plan_files_match_make_plan(self):
        with tempfile.TemporaryDirectory() as d:
            for fn, args in ((PLAN, []), (PLAN2, ["--batch2"]), (PLAN3, ["--dora"]),
                             (PLAN4, ["--ga"]), (PLAN5, ["--windows"]),
                             (PLAN6, ["--fused"]), (PLAN7, ["--layernorm"]),
                             (PLAN8, ["--generate"])):
                out = os.path.join(d, "p.json")
                subprocess.run([sys.executable, os.path.join(HERE, "make_plan.py")] + args
                               + [out], capture_output=True, text=True, check=True)
                with open(out) as f, open(fn) as g:
                    self.assertEqual(f.read(), g.read(), fn)

    def test_dry_run_cli_skips_bad_points_without_torch(self):
        with open(PLAN) as f:
            pts = json.load(f)[:3]
        b = copy.deepcopy(pts[1])
        b["id"] = "bad"
        b["parallel"]["method"] = "ddp"
        with tempfile.TemporaryDirectory() as d:
            fn = os.path.join(d, "p.json")
            with open(fn, "w") as f:
                json.dump(pts + [b], f)
            r = subprocess.run([sys.executable, os.path.join(HERE, "measure.py"), fn,
                                "--dry-run"], capture_output=True, text=True, check=True)
        self.assertIn("SKIP [3] bad", r.stdout)
        self.assertIn("3 runnable of 4 selected points", r.stdout)


class MeasuredFileTest(unittest.TestCase):
    """Batch 1: validation/measured_h100.json."""
    MEASURED = MEASURED
    PLAN = PLAN
    RAWS = ["run1_raw.jsonl", "run2_raw.jsonl", "run3_raw.jsonl"]
    ENV = "run1.log"
    CONFIGS = 56
    RAW_DIR = RAW_DIR
    MEMORY_GIB = 80.0
    ALLOWED = {
        "trust": {"high", "medium", "low"},
        "metric": {"allocated", "reserved", "nvml_used", "unknown", "none"},
        "kind": {"peak", "oom_lower_bound", "capacity_upper_bound", "calibration",
                 "throughput_only"},
    }

    def setUp(self):
        with open(self.MEASURED) as f:
            self.pts = json.load(f)

    def test_count(self):
        self.assertEqual(len(self.pts), 3 * self.CONFIGS)

    def test_schema(self):
        ids = set()
        for p in self.pts:
            self.assertEqual(list(p.keys()), measure.POINT_KEYS, p["id"])
            self.assertEqual(list(p["model"].keys()), measure.MODEL_KEYS)
            self.assertEqual(list(p["workload"].keys()), measure.WORKLOAD_KEYS)
            self.assertEqual(list(p["parallel"].keys()), measure.PARALLEL_KEYS)
            self.assertEqual(list(p["gpu"].keys()), measure.GPU_KEYS)
            for k, allowed in self.ALLOWED.items():
                self.assertIn(p[k], allowed, p["id"])
            self.assertIsInstance(p["measured_gib"], float)
            self.assertGreaterEqual(p["measured_gib"], 0.0)
            self.assertLess(p["measured_gib"], self.MEMORY_GIB)
            self.assertIsInstance(p["assumptions"], list)
            self.assertTrue(p["original_notes"].startswith("[raw measurement, bytes] "))
            if p["throughput"] is not None:
                self.assertEqual(list(p["throughput"].keys()), measure.THROUGHPUT_KEYS)
            if p["model"]["config"] is not None:
                for k in measure.CONFIG_REQUIRED:
                    self.assertIn(k, p["model"]["config"])
                self.assertIsInstance(p["model"]["params"], int)
            self.assertNotIn(p["id"], ids)
            ids.add(p["id"])
            plan_for(p)

    def test_three_metrics_per_configuration(self):
        by_base = {}
        for p in self.pts:
            base, _, suf = p["id"].rpartition("-")
            by_base.setdefault(base, {})[suf] = p
        for base, d in by_base.items():
            self.assertEqual(set(d), {"alloc", "reserved", "nvml"}, base)
            self.assertEqual(d["alloc"]["metric"], "allocated")
            self.assertEqual(d["reserved"]["metric"], "reserved")
            self.assertEqual(d["nvml"]["metric"], "nvml_used")
            # allocated <= reserved <= device-level used, by construction
            self.assertLessEqual(d["alloc"]["measured_gib"], d["reserved"]["measured_gib"])
            self.assertLessEqual(d["reserved"]["measured_gib"], d["nvml"]["measured_gib"])

    def test_regenerates_from_raw_logs(self):
        raws = [os.path.join(self.RAW_DIR, r) for r in self.RAWS]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.json")
            with open(self.PLAN) as f:
                pts = json.load(f)
            import contextlib
            import io
            with contextlib.redirect_stdout(io.StringIO()):
                measure.from_raw(pts, raws, os.path.join(self.RAW_DIR, self.ENV), out)
            with open(out) as f:
                regenerated = json.load(f)
        self.assertEqual(regenerated, self.pts)


class MeasuredBatch2FileTest(MeasuredFileTest):
    """Batch 2: validation/measured_h100_batch2.json (new mechanisms)."""
    MEASURED = MEASURED2
    PLAN = PLAN2
    RAWS = ["batch2_run1_raw.jsonl", "batch2_run2_raw.jsonl"]
    ENV = "batch2_run1.log"
    CONFIGS = 35

    def by_id(self, base, suffix="alloc"):
        return [p for p in self.pts if p["id"] == "%s-%s" % (base, suffix)][0]

    def test_new_mechanisms_recorded(self):
        import re

        def notes(base):
            return json.loads(self.by_id(base)["original_notes"].split("] ", 1)[1])
        # the GradScaler never skipped a step, so the AdamW states exist
        for base in ("h100-llama3.2-1b-ft-amp_fp16-adamw-b4-s512-sdpa",
                     "h100-llama3.1-8b-fp16-lora-r16-qv-amp_fp16-b4-s1024-sdpa"):
            n = notes(base)
            self.assertEqual(n["grad_scaler_scales"], [65536.0] * 3)
            self.assertGreater(n["optimizer_state_bytes"], 0)
        # static caches have the planned length (prompt + new - 1)
        for p in self.pts:
            if p["workload"]["kv_cache_tokens"] is not None and p["metric"] == "allocated":
                n = json.loads(p["original_notes"].split("] ", 1)[1])
                self.assertEqual(n["cache_class"], "StaticCache")
                self.assertEqual(n["kv_cache_max_len"], [p["workload"]["kv_cache_tokens"]])
        # fused projections got one adapter per fused matrix
        self.assertEqual(notes("h100-falcon7b-lora-r16-qkv-amp_bf16-b2-s512-sdpa")
                         ["lora_target_modules_found"], ["query_key_value"])
        self.assertEqual(notes("h100-phi3-mini-lora-r16-all-amp_bf16-b2-s1024-sdpa")
                         ["lora_target_modules_found"],
                         ["down_proj", "gate_up_proj", "o_proj", "qkv_proj"])
        # Adafactor's factored states are tiny next to AdamW's 8 bytes per parameter
        ada = notes("h100-llama3.2-1b-ft-amp_bf16-adafactor-b4-s512-sdpa")
        self.assertLess(ada["optimizer_state_bytes"], 0.01 * 8 * ada["params"])
        self.assertTrue(re.search(r"Adafactor\(lr=0.0001, relative_step=False",
                                  " ".join(self.by_id(
                                      "h100-llama3.2-1b-ft-amp_bf16-adafactor-b4-s512-sdpa")
                                      ["assumptions"])))


class MeasuredDoraFileTest(MeasuredFileTest):
    """Batch 3: validation/measured_h100_dora.json (DoRA beside LoRA of the same shape)."""
    MEASURED = MEASURED3
    PLAN = PLAN3
    RAWS = ["dora_run1_raw.jsonl"]
    ENV = "dora_run1.log"
    CONFIGS = 10

    def test_dora_trains_one_magnitude_per_output_feature(self):
        def trainable(pid):
            p = [x for x in self.pts if x["id"] == pid + "-alloc"][0]
            return json.loads(p["original_notes"].split("] ", 1)[1])["trainable_params"]
        # Llama-3.2-1B, q_proj and v_proj: 16 layers x (2048 + 512) output features
        self.assertEqual(trainable("h100-llama3.2-1b-dora-r8-qv-amp_bf16-b1-s512-sdpa")
                         - trainable("h100-llama3.2-1b-lora-r8-qv-amp_bf16-b1-s512-sdpa"),
                         16 * (2048 + 512))


class MeasuredGaFileTest(MeasuredFileTest):
    """Batch 4: validation/measured_h100_ga.json (gradient accumulation)."""
    MEASURED = MEASURED4
    PLAN = PLAN4
    RAWS = ["ga_run1_raw.jsonl"]
    ENV = "ga_run1.log"
    CONFIGS = 5

    def test_accumulation_recorded(self):
        for p in self.pts:
            self.assertTrue(any(a.startswith("gradient accumulation: each iteration runs")
                                for a in p["assumptions"]), p["id"])


class MeasuredWindowsFileTest(MeasuredFileTest):
    """Batch 5: validation/measured_h100_windows.json (Mistral-7B's sliding window under SDPA)."""
    MEASURED = MEASURED5
    PLAN = PLAN5
    RAWS = ["windows_run1_raw.jsonl"]
    ENV = "windows_run1.log"
    CONFIGS = 6


class MeasuredFusedFileTest(MeasuredFileTest):
    """Batch 6: validation/measured_h100_fused.json (fused q/k/v: GPT-NeoX, Phi-3)."""
    MEASURED = MEASURED6
    PLAN = PLAN6
    RAWS = ["fused_run1_raw.jsonl", "fused_run2_raw.jsonl"]  # run 2: the LoRA run 1 could not map
    ENV = "fused_run1.log"
    CONFIGS = 7


class MeasuredLayerNormFileTest(MeasuredFileTest):
    """Batch 7: validation/measured_h100_layernorm.json (LayerNorm models' LoRA under autocast)."""
    MEASURED = MEASURED7
    PLAN = PLAN7
    RAWS = ["layernorm_run1_raw.jsonl"]
    ENV = "layernorm_run1.log"
    CONFIGS = 3


class MeasuredGenerateFileTest(MeasuredFileTest):
    """Batch 8: validation/measured_h200_generate.json (generate() on an H200, long LoRA)."""
    MEASURED = MEASURED8
    PLAN = PLAN8
    RAW_DIR = os.path.join(ROOT, "validation", "raw_h200")
    RAWS = ["generate_run1_raw.jsonl", "generate_run2_raw.jsonl"]  # run 2: the dynamic caches
    ENV = "generate_run2.log"
    CONFIGS = 18
    MEMORY_GIB = 140.0

    def test_prefill_and_decode_apart(self):
        gens = [p for p in self.pts if p["metric"] == "allocated"
                and (p["workload"]["new_tokens"] or 0) > 1]
        self.assertEqual(len(gens), 13)
        for p in gens:
            raw = json.loads(p["original_notes"][len("[raw measurement, bytes] "):])
            whole = max(raw["prefill_peak_allocated"], raw["decode_peak_allocated"])
            self.assertEqual(raw["peak_allocated"], whole, p["id"])
            self.assertGreater(raw["prefill_s"], 0.0)
            self.assertGreater(raw["decode_s_per_token"], 0.0)


class PublicTableFileTest(unittest.TestCase):
    def test_torchtitan_file_is_what_its_script_writes(self):
        script = os.path.join(ROOT, "tools", "public", "torchtitan_performance_table.py")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.json")
            subprocess.run([sys.executable, script, out], capture_output=True, text=True,
                           check=True)
            with open(out) as f, open(os.path.join(ROOT, "validation",
                                                   "public_torchtitan.json")) as g:
                self.assertEqual(f.read(), g.read())


if __name__ == "__main__":
    unittest.main()
