// The words the page shows: a person's name for every choice, field, component, phase and API
// field, so that no internal id reaches a sentence, a table or a legend.

export const CHOICES = {
  phase: { train: 'Fine-tune', inference: 'Serve' },
  mode: { detailed: 'Detailed (replay of a step)', llmem: 'LLMem (IJCAI 2024 paper)' },
  method: {
    auto: 'Auto: the planner chooses', single: 'One GPU', ddp: 'DDP', zero1: 'ZeRO-1', zero2: 'ZeRO-2', zero3: 'ZeRO-3',
    fsdp_full_shard: 'FSDP full shard', fsdp_shard_grad_op: 'FSDP grad-op', tensor_parallel: 'Tensor parallelism',
    pipeline: 'Pipeline', cdp: 'LLMem CDP (replicas)', adp: 'LLMem ADP (sharded)', tp: 'LLMem TP',
  },
  ft: { full: 'Full fine-tuning', lora: 'LoRA', qlora: 'QLoRA (4-bit base)', lora_int8: 'LoRA (8-bit base)', dora: 'DoRA', ia3: 'IA3' },
  precision: { amp_bf16: 'Mixed bf16 (AMP)', amp_fp16: 'Mixed fp16 (AMP)', pure_bf16: 'Pure bf16', pure_fp16: 'Pure fp16', fp32: 'fp32' },
  opt: { adamw: 'AdamW', adamw_8bit: 'AdamW 8-bit', adafactor: 'Adafactor', sgd: 'SGD', sgd_momentum: 'SGD with momentum' },
  attn: { sdpa: 'SDPA', eager: 'Eager', flash: 'FlashAttention' },
  ckpt: { 0: 'Off', 1: 'Every block', selective: 'Selective (attention core; torchtitan: per op)', auto: 'The plan chooses (off for one method)' },
  fw: {
    transformers: 'transformers + PEFT', litgpt: 'litgpt', torchtune: 'torchtune', unsloth: 'unsloth (LoRA)',
    torchtitan: 'torchtitan (full)', vllm: 'vLLM', llama_cpp: 'llama.cpp', autoawq: 'AutoAWQ (fused, serving)',
  },
  loop: {
    trainer: 'HF Trainer / TRL', outputs: 'Loop keeping outputs (accelerate, PEFT)',
    own_loss: 'Own cross-entropy (Lightning)', own_loss_kept: 'Own cross-entropy, logits kept',
  },
  weights: {
    auto: 'As the checkpoint stores them', bf16: 'bf16', fp16: 'fp16', fp32: 'fp32', fp8: 'FP8', int8: '8-bit (bitsandbytes)', nf4: '4-bit NF4 (bitsandbytes)',
    nf4_double_quant: '4-bit NF4, double quantised', gptq_4bit: 'GPTQ 4-bit', awq_4bit: 'AWQ 4-bit', mxfp4: 'MXFP4 experts (gpt-oss)',
    gguf_q8_0: 'GGUF Q8_0', gguf_q6_k: 'GGUF Q6_K', gguf_q5_k_m: 'GGUF Q5_K_M', gguf_q4_k_m: 'GGUF Q4_K_M',
    gguf_q3_k_m: 'GGUF Q3_K_M', gguf_q2_k: 'GGUF Q2_K',
  },
  kv: { auto: 'Framework default', dynamic: 'Grown (dynamic)', static: 'Preallocated (static)', paged: 'Paged (vLLM)' },
  kvdtype: { auto: 'Compute dtype', bf16: 'bf16', fp16: 'fp16', fp8: 'FP8', int8: 'int8' },
  oopt: { none: 'GPU', cpu: 'Host RAM', nvme: 'NVMe' },
  oparams: { none: 'GPU', cpu: 'Host RAM', nvme: 'NVMe', auto: 'Gemini auto placement' },
  ograd: { none: 'With the optimizer', cpu: 'Host RAM', nvme: 'NVMe' },
  oact: { none: 'GPU', cpu: 'Host RAM', nvme: 'NVMe' },
  metric: { device_used: 'nvidia-smi (device used)', reserved: 'PyTorch reserved', allocated: 'PyTorch allocated' },
  unit: { gib: 'GiB (2^30 bytes)', gb: 'GB (10^9 bytes)' },
  solve: { '': 'The request as given', max_context: 'The longest context', max_batch: 'The most sequences' },
};

// Each form field's label: the form shows it, and errors name it.
export const FIELD_LABELS = {
  model: 'Model', gpu: 'GPU', gpus: 'GPUs per node', nodes: 'Nodes', phase: 'Task', ft: 'Fine-tuning',
  seq: 'Tokens per sequence', mb: 'Micro-batch per GPU', new: 'New tokens', weights: 'Weights',
  mem: 'Custom memory (GiB)', bw: 'Custom bandwidth (GB/s)', headroom: 'Headroom (% of each GPU)',
  method: 'Method', mode: 'Estimator', r: 'LoRA rank', ldrop: 'LoRA dropout', targets: 'LoRA targets',
  save: 'Trained copies (modules_to_save)', precision: 'Precision', opt: 'Optimizer', ckpt: 'Gradient checkpointing',
  attn: 'Attention', fw: 'Framework', loop: 'Training loop', torch: 'torch release', peft: 'PEFT release', tf: 'transformers release',
  bnb: 'bitsandbytes release', tgt: 'Decoder tokens (T5)', kv: 'KV cache', kvdtype: 'KV cache dtype',
  oopt: 'Optimizer states on', oparams: 'Parameters on', ograd: 'Gradients on', oact: 'Activations on',
  ram: 'Host RAM per node (GiB)', disk: 'NVMe per node (GiB)', metric: 'Metric', unit: 'Units',
  solve: 'Solve for', config: 'Pasted config.json', ttok: 'Tokens to train', gprice: 'GPU price ($ per hour)',
};

// An API field (docs/api.md) -> the form field that sets it. Longest prefixes first.
const API_FIELDS = [
  ['model.config', 'config'], ['model', 'model'], ['cluster.gpu.memory_bytes', 'mem'],
  ['cluster.gpu.memory_bandwidth_bytes_per_s', 'bw'], ['cluster.gpu', 'gpu'], ['cluster.gpus_per_node', 'gpus'],
  ['cluster.gpus', 'gpus'], ['cluster.headroom', 'headroom'], ['cluster.host_ram_bytes', 'ram'], ['cluster.nvme_bytes', 'disk'],
  ['workload.train_tokens', 'ttok'], ['workload.micro_batch', 'mb'], ['workload.seq_len', 'seq'], ['workload.target_len', 'tgt'], ['workload.new_tokens', 'new'],
  ['workload.lora.r', 'r'], ['workload.lora.dropout', 'ldrop'], ['workload.lora.targets', 'targets'],
  ['workload.lora.modules_to_save', 'save'], ['workload.lora', 'targets'], ['workload.finetune', 'ft'],
  ['workload.weights', 'weights'], ['workload.compute', 'precision'], ['workload.optimizer', 'opt'],
  ['workload.grad_ckpt', 'ckpt'], ['workload.attention', 'attn'], ['workload.framework', 'fw'],
  ['workload.loss', 'loop'], ['workload.keep_outputs', 'loop'], ['workload.software.torch', 'torch'],
  ['workload.software.peft', 'peft'], ['workload.software.transformers', 'tf'], ['workload.software.bitsandbytes', 'bnb'], ['workload.kv_cache.kind', 'kv'],
  ['workload.kv_cache.dtype', 'kvdtype'], ['workload.kv_cache', 'kv'], ['workload.kbit_preparation', 'ft'],
  ['parallel.offload.optimizer', 'oopt'], ['parallel.offload.params', 'oparams'], ['parallel.offload.gradients', 'ograd'],
  ['parallel.offload.activations', 'oact'], ['parallel', 'method'], ['metric', 'metric'], ['mode', 'mode'], ['solve', 'solve'],
];

export function formFieldOf(apiField = '') {
  const hit = API_FIELDS.find(([prefix]) => apiField === prefix || apiField.startsWith(`${prefix}.`));
  return hit ? hit[1] : null;
}

// A form field's unit against the API's: the factor that turns the API's number into the form's.
export const FORM_UNITS = {
  mem: { per: 2 ** 30, unit: 'GiB' }, ram: { per: 2 ** 30, unit: 'GiB' }, disk: { per: 2 ** 30, unit: 'GiB' },
  bw: { per: 1e9, unit: 'GB/s' }, headroom: { per: 0.01, unit: '%' },
};

export const COMPONENT_NAMES = {
  weights: 'Weights', master_weights: 'fp32 master weights', gathered_params: 'Gathered parameters',
  communication_buffers: 'Communication buffers', adapters: 'Adapters', autocast_weight_copies: 'Autocast weight copies',
  activations: 'Activations', logits_and_loss: 'Logits and loss', gradients: 'Gradients', optimizer_states: 'Optimizer states',
  optimizer_temporaries: 'Optimizer step temporaries', gemini_chunks_on_gpu: 'Gemini chunks kept on the GPU',
  kv_cache: 'KV cache', cuda_workspace: 'cuBLAS workspaces', allocator_cache: 'Allocator cache (reserved, unused)',
  paged_optimizer_states: 'Paged optimizer states', cuda_context: 'CUDA context', cuda_libraries: 'CUDA libraries',
  nccl_buffers: 'NCCL buffers',
  parameters: 'Parameters', parameters_in_cpu: 'Parameters', optimizer_swap_buffers: 'Optimizer swap buffers',
  parameter_swap_buffers: 'Parameter swap buffers', activation_swap_buffers: 'Activation swap buffers',
  activation_checkpoints: 'Checkpointed block inputs', checkpoint_load: 'Checkpoint while loading', other: 'Other',
  // LLMem mode's components (docs/llmem.md).
  m_init: 'Initial memory', lm_head_weight: 'LM head weight', input: 'Input token ids',
  tp_gather_buffers: 'Tensor-parallel gather buffers',
};

export const componentName = (id) => COMPONENT_NAMES[id] ?? id.replace(/_/g, ' ');

export const PHASE_NAMES = {
  load: 'loading', forward: 'forward pass', loss: 'loss', backward: 'backward pass', 'optimizer step': 'optimizer step',
  prefill: 'prefill', decode: 'decoding', 'KV cache': 'KV cache allocation', serving: 'serving', 'profile run': 'profiling run',
};

export const phaseName = (id) => PHASE_NAMES[id] ?? id;

export const LIMITS = {
  memory: 'GPU memory', kv_capacity: 'KV cache capacity', invalid: 'cannot split this way',
};
