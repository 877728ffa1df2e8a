// The command line's help text (gpumem --help; after a message for bad arguments).
#include "usage.hpp"

namespace gpumem::cli {

const char* usage_text() {
  return R"(gpumem - GPU memory planner for fine-tuning and serving LLMs

Usage:
  gpumem models [--json]                       model presets with parameter counts
  gpumem gpus [--json]                         GPU presets
  gpumem sources [--json]                      where each preset's config.json and each GPU's
                                               figures come from
  gpumem params --model M [--task-head H] [--json]
                                               parameter counts by module group and block;
                                               M is a preset id or a path to config.json
  gpumem estimate --model M --micro-batch B [--seq-len S] [--gpu G] [--json]
                  detailed (default): [--phase train|forward_backward]
                    [--finetune full|lora|dora|ia3|prompt_tuning|llama_adapter_v1|
                                llama_adapter_v2 (litgpt)]
                    [--lora-r R] [--lora-targets q_proj,v_proj|all-linear (embed_tokens:
                     LoRA on the token embedding)] [--lora-dropout P (PEFT 0, litgpt 0.05)]
                    [--modules-to-save embed_tokens,lm_head (PEFT's trained copies)]
                    [--ia3-targets k_proj,v_proj,down_proj (PEFT IA3's default)]
                    [--num-virtual-tokens N (prompt tuning)]
                    [--target-len T (encoder-decoders: the decoder's tokens; default seq-len)]
                    [--weights bf16|fp16|fp32|int8|nf4|fp4|nf4_double_quant (quantised LoRA base)
                     [--no-kbit-preparation: without PEFT's prepare_model_for_kbit_training]]
                    [--compute fp32|amp_bf16|amp_fp16|pure_bf16|...]
                    [--optimizer adamw|adafactor|sgd|sgd_momentum|none]
                    [--optimizer-impl foreach|for_loop|fused (torch.optim AdamW)]
                    [--grad-ckpt | --no-grad-ckpt | --selective-recompute (the attention
                     core only; torchtitan: its per-op policy); a plan given none of them
                     chooses checkpointing for each method]
                    [--grad-accumulation N]
                    [--attention sdpa|eager]
                    [--loss model|plain_cross_entropy (the script's own, in the logits' dtype)]
                    [--keep-outputs: the loop holds each forward's logits until the next]
                    [--torch-version V --bitsandbytes-version V --peft-version V
                     --transformers-version V: the releases where one changed what a step keeps
                     (torch < 2.0, bitsandbytes >= 0.45, peft < 0.12, transformers < 4.54 copies
                     grouped-query K/V for SDPA, < 4.49 copies the logits shifted)]
                    [--framework transformers|litgpt|torchtune|unsloth|torchtitan]
                    [--metric allocated|reserved|device_used]
                    [--gpus N --method ddp|zero1|zero2|zero3|gemini|fsdp_full_shard|
                                       fsdp_shard_grad_op|fsdp_hybrid_shard (--gpus-per-node M)|
                                       tensor_parallel [--sequence-parallel]|
                                       pipeline [--micro-batches M] [--pp P --tp T
                                         --dp-method ddp|zero1: 3D, P stages of T GPUs]]
                    [--tp T: DP+TP, T tensor-parallel GPUs per data-parallel group]
                    [--cp C [--cp-kind ring|ulysses]: context parallelism under a
                     data-parallel method, each sequence split over C GPUs]
                    [--reduce-bucket-size E (zero2, zero3) --prefetch-bucket-size E
                     --persistence-threshold E (zero3): DeepSpeed's, in elements]
                    [--offload-optimizer|--offload-params|--offload-gradients|
                     --offload-activations none|cpu|nvme] [--host-ram-gib R] [--nvme-gib N]
                  --mode llmem: --gpus N --method single|cdp|adp|tp|dp_tp [--tp T]
                  inference: --phase inference [--micro-batch sequences] [--seq-len prompt]
                    [--new-tokens N] [--weights bf16|fp16|fp32|fp8|int8|nf4|fp4|nf4_double_quant|
                     gptq_4bit|awq_4bit|mxfp4 (gpt-oss's experts)|gguf_q8_0|gguf_q6_k|
                     gguf_q5_k_m|gguf_q4_k_m|gguf_q3_k_m|gguf_q2_k] [--group-size G] [--fp8-scaling per_tensor|per_channel]
                    [--framework transformers|litgpt|vllm|llama_cpp|autoawq]
                    [--kv-cache dynamic|static|paged] [--kv-dtype bf16|fp16|fp8|int8]
                    [--kv-tokens T] [--gpu-memory-utilization U]
                    [--transformers-version V: generate()'s release (before 4.45 every prompt
                     position's logits, before 4.42 kept into the first decode step)]
                    [--gpus N --method tensor_parallel|pipeline]
                    [--solve max_context|max_batch]
                  training: [--solve max_batch] instead of --micro-batch: the largest that fits
                  [--headroom F: the fraction of each GPU's memory kept free, default 0.05]
                                               per-GPU memory, by component
  gpumem plan --model M --gpus N [--gpu G] [--seq-len S] [--mode llmem] [--json]
                  [the detailed workload options above; --micro-batch B tries every method at B]
                  [--global-batch G: sequences per optimizer step; each method's micro-batch
                   and gradient accumulation make it up]
                  [--train-tokens N [--price-per-gpu-hour P]: how long, and what it costs]
                                               the fastest method that fits, and its batch size,
                                               and the changes that would fit or run faster;
                                               with --phase inference the fewest GPUs that serve
  gpumem export --format deepspeed|accelerate|axolotl|litgpt|torchtune|torchrun|
                         transformers|vllm|llama_cpp
                  [the estimate options above] [--write DIR] [--json]
                                               the files and the command that launch the
                                               estimated setup (printed, or written to DIR)
  gpumem estimate|export|plan --from FILE [--format deepspeed|accelerate|axolotl|torchtune|vllm|
                                               llama_cpp]
                                               read a DeepSpeed config (JSON), an accelerate,
                                               axolotl or torchtune config (YAML), a `tune run`,
                                               `vllm serve` or llama-server line into the
                                               request; options given win over it
  gpumem validate FILE [--json]                score the estimators on measured points
                                               (../shared/validation/README.md format)
  gpumem run --request FILE|-                  answer any API request (docs/api.md)

  G is a GPU preset id (gpumem gpus; default a100-sxm4-80gb). Sizes are in GiB (2^30 bytes).
  gpumem --version | --help
)";
}

}  // namespace gpumem::cli
