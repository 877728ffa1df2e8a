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
MEASURED = os.path.join(ROOT, "validation", "measured_h100.json")
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
BLOOM = {"model_type": "bloom", "hidden_size": 1024, "num_hidden_layers": 24,
         "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 64,
         "intermediate_size": 4096, "vocab_size": 250880, "tie_word_embeddings": True,
         "max_position_embeddings": None, "mlp_gated": False}


def point(config=LLAMA_1B, name="meta-llama/Llama-3.2-1B", **wl):
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
            "throughput": None, "assumptions": [], "original_notes": ""}


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

    def test_plan_is_pure_and_torch_free(self):
        pt = point()
        before = copy.deepcopy(pt)
        self.assertEqual(plan_for(pt), plan_for(pt))
        self.assertEqual(pt, before)
        self.assertNotIn("torch", sys.modules)


class PlanFileTest(unittest.TestCase):
    def test_every_planned_point_is_runnable(self):
        with open(PLAN) as f:
            pts = json.load(f)
        self.assertGreaterEqual(len(pts), 40)
        ids = [p["id"] for p in pts]
        self.assertEqual(len(ids), len(set(ids)))
        for p in pts:
            plan_for(p)
            self.assertIsNone(p["measured_gib"])
            self.assertEqual(list(p.keys()), measure.POINT_KEYS)

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
    ALLOWED = {
        "trust": {"high", "medium", "low"},
        "metric": {"allocated", "reserved", "nvml_used", "unknown", "none"},
        "kind": {"peak", "oom_lower_bound", "capacity_upper_bound", "calibration",
                 "throughput_only"},
    }

    def setUp(self):
        with open(MEASURED) as f:
            self.pts = json.load(f)

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
            self.assertLess(p["measured_gib"], 80.0)
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
        raws = [os.path.join(RAW_DIR, "run%d_raw.jsonl" % i) for i in (1, 2, 3)]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.json")
            with open(PLAN) as f:
                pts = json.load(f)
            import contextlib
            import io
            with contextlib.redirect_stdout(io.StringIO()):
                measure.from_raw(pts, raws, os.path.join(RAW_DIR, "run1.log"), out)
            with open(out) as f:
                regenerated = json.load(f)
        self.assertEqual(regenerated, self.pts)


if __name__ == "__main__":
    unittest.main()
