#!/usr/bin/env python3
"""Writes presets/models/ from ../shared/reference/models.json (the verified config.json values
and their sources): one file per model and index.json for the page. Run it when the reference
changes; tests/js/presets.test.mjs checks the two agree."""
import json
import pathlib
import sys

FAMILIES = {
    "opt": "OPT", "bloom": "BLOOM", "codegen": "CodeGen", "gpt_neo": "GPT-Neo", "biogpt": "BioGPT",
    "gpt_bigcode": "StarCoder / SantaCoder", "gpt2": "GPT-2", "gpt_neox": "Pythia / GPT-NeoX",
    "gptj": "GPT-J", "llama": "Llama", "mistral": "Mistral", "mixtral": "Mixtral", "qwen2": "Qwen",
    "qwen2_moe": "Qwen", "gemma": "Gemma", "gemma2": "Gemma", "phi": "Phi", "phi3": "Phi",
    "falcon": "Falcon", "deepseek_v3": "DeepSeek", "bert": "BERT", "t5": "T5", "mt5": "T5",
}


def file_name(model_id):
    return model_id.replace("/", "--") + ".json"


def main(reference, out_dir):
    models = json.load(open(reference))
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for model_id, entry in models.items():
        model_type = entry["config"]["model_type"]
        preset = {
            "id": model_id,
            "family": FAMILIES[model_type],
            "config": entry["config"],
            "published_params": entry["params"],
            "verified": entry["verified"],
            "source": entry["source"],
            "notes": entry["notes"],
        }
        (out / file_name(model_id)).write_text(json.dumps(preset, indent=1) + "\n")
        index.append({"id": model_id, "file": file_name(model_id), "family": FAMILIES[model_type],
                      "model_type": model_type})
    (out / "index.json").write_text(json.dumps({"models": index}, indent=1) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
