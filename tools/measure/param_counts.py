#!/usr/bin/env python3
"""Ground-truth parameter counts from Hugging Face transformers, without weights.

Builds every preset (and a few extra architectures from tests/configs/) on PyTorch's `meta`
device from its config.json fields, so nothing is downloaded or allocated, and records the
model's own parameter count (tied weights counted once, as `model.num_parameters()` does) plus
every parameter's name and shape. The C++ core's counts are tested against the output,
tests/golden/hf_param_counts.json.

Usage (needs torch + transformers; no GPU needed):
  python3 tools/measure/param_counts.py shared/reference/models.json tests/configs out.json
"""
import json
import pathlib
import sys

import torch
import transformers

# Keys that would make transformers quantise or load remote code rather than build the module.
DROPPED_KEYS = ("auto_map", "quantization_config")

# Encoder models are counted under each task head users pick (transformers class names).
BERT_HEADS = {
    "base": "BertModel",
    "masked_lm": "BertForMaskedLM",
    "pretraining": "BertForPreTraining",
    "sequence_classification": "BertForSequenceClassification",
    "token_classification": "BertForTokenClassification",
    "question_answering": "BertForQuestionAnswering",
}


def build(cls_name, config):
    cls = getattr(transformers, cls_name)
    with torch.device("meta"):
        return cls._from_config(config)


def describe(model):
    tensors = [(n, list(p.shape)) for n, p in model.named_parameters()]
    tied = sorted(
        {n for n, _ in model.named_parameters(remove_duplicate=False)} - {n for n, _ in tensors})
    return {
        "total_params": sum(p.numel() for p in model.parameters()),
        "tied_names": tied,
        "tensors": tensors,
    }


def main(models_path, extra_dir, out_path):
    entries = {}
    for model_id, entry in json.load(open(models_path)).items():
        entries[model_id] = entry["config"]
    for path in sorted(pathlib.Path(extra_dir).glob("*.json")):
        entries["tests/configs/" + path.name] = json.load(open(path))

    result = {
        "generated_by": "tools/measure/param_counts.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "models": {},
    }
    for model_id, raw in entries.items():
        fields = {k: v for k, v in raw.items() if k not in DROPPED_KEYS}
        model_type = fields.pop("model_type")
        heads = {}
        try:
            config = transformers.AutoConfig.for_model(model_type, **fields)
            if model_type == "bert":
                for head, cls_name in BERT_HEADS.items():
                    heads[head] = describe(build(cls_name, config))
            else:
                archs = raw.get("architectures") or []
                cls_name = archs[0] if archs and hasattr(transformers, archs[0]) else None
                if cls_name is None:
                    model = transformers.AutoModelForCausalLM.from_config(config) \
                        if model_type not in ("t5", "mt5") else None
                    cls_name = type(model).__name__ if model is not None else \
                        {"t5": "T5ForConditionalGeneration", "mt5": "MT5ForConditionalGeneration"}[model_type]
                heads["causal_lm"] = describe(build(cls_name, config))
                heads["causal_lm"]["class"] = cls_name
        except Exception as error:  # record and go on: one odd config must not hide the rest
            heads["error"] = f"{type(error).__name__}: {error}"
        result["models"][model_id] = heads
        totals = {h: v["total_params"] for h, v in heads.items() if isinstance(v, dict)}
        print(model_id, totals, heads.get("error", ""), flush=True)
    json.dump(result, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
