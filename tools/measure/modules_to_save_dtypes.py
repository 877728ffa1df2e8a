#!/usr/bin/env python3
"""Check the dtypes PEFT gives `modules_to_save` copies and their AdamW states (a mechanism
check for gpumem's modules_to_save rule, not a validation point).

A 2-layer Llama from a config (random weights) is loaded in bf16 (pure bf16 training) and in
fp32 (AMP bf16 training); LoRA on q_proj/v_proj with modules_to_save=["embed_tokens",
"lm_head"]; one AdamW step. Prints the dtype of every trainable tensor and of its states.

Usage: python3 tools/measure/modules_to_save_dtypes.py
"""
import json


def main():
    import peft
    import torch
    import transformers
    print("environment:", json.dumps({"torch": torch.__version__, "peft": peft.__version__,
                                      "transformers": transformers.__version__}))
    cfg = transformers.AutoConfig.for_model(
        "llama", hidden_size=256, intermediate_size=512, num_attention_heads=4,
        num_key_value_heads=4, num_hidden_layers=2, vocab_size=1024, tie_word_embeddings=False)
    for load, autocast in ((torch.bfloat16, False), (torch.float32, True)):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=load).cuda()
        lora = peft.LoraConfig(r=8, target_modules=["q_proj", "v_proj"],
                               modules_to_save=["embed_tokens", "lm_head"])
        model = peft.get_peft_model(model, lora)
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
        ids = torch.randint(0, 1024, (2, 64), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        print("load %s, autocast %s" % (load, autocast))
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            st = opt.state[p]
            print("   %-75s %-8s grad %-8s exp_avg %s" % (
                name, str(p.dtype).replace("torch.", ""),
                str(p.grad.dtype).replace("torch.", ""),
                str(st["exp_avg"].dtype).replace("torch.", "")))
        del model, opt


if __name__ == "__main__":
    main()
