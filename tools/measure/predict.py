#!/usr/bin/env python3
"""gpumem's prediction for every configuration of a measurement plan, written before it runs.

For each configuration: the peak allocated, reserved and device-used memory `gpumem validate`
estimates for it (the plan's point with a placeholder measurement, so the request is the one the
measured file will be scored with), and its timing: a training point's step time (validate's
step-time model), a generate point's prefill seconds and decode step (`gpumem estimate`).

Usage: python3 tools/measure/predict.py PLAN.json OUT.json [--gpumem build/native-release/gpumem]
"""
import copy
import json
import subprocess
import sys
import tempfile

METRICS = [("allocated", "alloc"), ("reserved", "reserved"), ("nvml_used", "nvml")]


def placeholder_points(plan):
    out = []
    for p in plan:
        for metric, suffix in METRICS:
            q = copy.deepcopy(p)
            q["id"] = "%s-%s" % (p["id"], suffix)
            q["metric"], q["measured_gib"], q["source"] = metric, 1.0, "prediction"
            if q["workload"]["phase"] == "train":
                q["throughput"] = {"tokens_per_s_per_gpu": None, "tflops_per_gpu": None,
                                   "step_time_s": 1.0}
            out.append(q)
    return out


def generate_args(p):
    w = p["workload"]
    args = ["estimate", "--model", p["model"]["name"].replace("openai-community/", ""),
            "--phase", "inference", "--micro-batch", str(w["micro_batch"]),
            "--seq-len", str(w["seq_len"]), "--new-tokens", str(w["new_tokens"]),
            "--weights", w["weights"], "--gpu", "h200", "--json"]
    if w["kv_cache_tokens"] is not None:
        args += ["--kv-cache", "static", "--kv-tokens", str(w["kv_cache_tokens"])]
    return args


def main():
    argv = sys.argv[1:]
    exe = "build/native-release/gpumem"
    if "--gpumem" in argv:
        i = argv.index("--gpumem")
        exe = argv[i + 1]
        del argv[i:i + 2]
    plan_path, out_path = argv
    plan = json.load(open(plan_path))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(placeholder_points(plan), f)
    answer = json.loads(subprocess.run([exe, "validate", f.name, "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    est = {q["id"]: q for q in answer["points"]}
    steps = {q["id"]: q for q in answer["step_time"]["points"]}
    out = []
    for p in plan:
        row = {"id": p["id"]}
        for metric, suffix in METRICS:
            q = est["%s-%s" % (p["id"], suffix)]
            row[metric + "_gib"] = round(q["estimated_gib"], 3)
            row["note"] = q.get("note", "")
        if p["workload"]["phase"] == "train":
            s = steps.get("%s-alloc" % p["id"])
            row["step_time_s"] = round(s["estimated"], 4) if s and s.get("estimated") else None
        elif p["workload"]["new_tokens"] > 1:
            e = json.loads(subprocess.run([exe] + generate_args(p), check=True,
                                          capture_output=True, text=True).stdout)
            row["peak_phase"] = e.get("peak_phase")
            row["prefill_s"] = round(e["speed"]["prefill_s"], 4)
            row["decode_step_s"] = round(e["speed"]["decode_step_s"], 5)
        out.append(row)
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote %d predictions to %s" % (len(out), out_path))


if __name__ == "__main__":
    main()
