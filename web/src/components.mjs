// One line per memory component the API reports: its colour (the same wherever it appears), what
// it holds, where its formula comes from, and its explanation in docs/methodology.md (shipped with
// the site as methodology.html; each component has an anchor there, component-<id>).
import { componentName } from './labels.mjs';

export const COMPONENTS = {
  weights: ['#4e79a7', 'The model parameters as stored on this GPU (its shard when sharded; quantised formats with their scales).', 'transformers modeling code, parameter by parameter'],
  master_weights: ['#76b7b2', 'fp32 copies of 16-bit trainable weights kept by mixed-precision optimizers.', 'DeepSpeed / Colossal-AI optimizer code'],
  gathered_params: ['#a0cbe8', 'Unsharded parameters being computed under ZeRO-3 / FSDP and what is prefetched.', 'FSDP FlatParameter, DeepSpeed ZeRO-3'],
  communication_buffers: ['#9c755f', 'DDP gradient buckets and ZeRO reduce buckets.', 'torch DDP bucket_cap_mb, DeepSpeed reduce_bucket_size'],
  adapters: ['#f28e2b', 'LoRA A/B matrices (and DoRA magnitudes, PEFT\'s trained copies).', 'PEFT tuners/lora'],
  autocast_weight_copies: ['#ffbe7d', '16-bit copies of fp32 weights that autocast caches for the step.', 'torch.autocast weight cache'],
  activations: ['#59a14f', 'Tensors saved for backward and the temporaries of the layer running (serving: one layer at a time).', 'modeling code and aten derivative rules'],
  logits_and_loss: ['#8cd17d', 'The LM head output, its fp32 copies and the loss.', 'transformers loss_utils, generate sampling'],
  gradients: ['#e15759', 'Gradients of the trainable parameters (sharded under ZeRO-2/3, FSDP).', 'torch autograd'],
  optimizer_states: ['#b07aa1', 'AdamW moments (or Adafactor factors, SGD momentum).', 'torch.optim, bitsandbytes'],
  optimizer_temporaries: ['#d4a6c8', 'The optimizer step\'s intermediate tensors (foreach AdamW).', 'torch.optim._multi_tensor'],
  gemini_chunks_on_gpu: ['#86bcb6', 'Parameter chunks Gemini\'s auto placement keeps on the GPU.', 'Colossal-AI AutoPlacementPolicy'],
  kv_cache: ['#edc948', 'Keys and values of every past token (preallocated, grown, or vLLM\'s paged blocks).', 'transformers cache_utils, vLLM block manager'],
  cuda_workspace: ['#bab0ac', 'cuBLAS/cuBLASLt workspaces allocated through PyTorch.', 'aten CublasHandlePool.cpp'],
  allocator_cache: ['#d7b5a6', 'Reserved by PyTorch\'s caching allocator but not in use: rounding and cached free blocks.', 'c10 CUDACachingAllocator.cpp'],
  paged_optimizer_states: ['#ff9da7', 'Optimizer states in CUDA unified memory (paged optimizers), outside the allocator.', 'bitsandbytes paged optimizers'],
  cuda_context: ['#79706e', 'The CUDA context of the process (per GPU architecture).', 'measured per architecture'],
  cuda_libraries: ['#9d7660', 'Kernels cuBLAS/cuBLASLt load on their first products.', 'measured on an H100'],
  nccl_buffers: ['#8c6d31', 'NCCL\'s buffers for the GPUs\' collectives, outside PyTorch\'s allocator (NVLink nodes).', 'NCCL 2.18-2.21 transport and NVLS code'],
  parameters: ['#2f5d8a', 'Offloaded parameters (this rank\'s share), brought to the GPU block by block.', 'DeepSpeed offload_param, FSDP CPUOffload'],
  optimizer_swap_buffers: ['#c9a0dc', 'Pinned host buffers that stage optimizer states to and from NVMe.', 'DeepSpeed offload_optimizer'],
  parameter_swap_buffers: ['#7fa7d1', 'Pinned host buffers that stage parameters to and from NVMe.', 'DeepSpeed offload_param'],
  activation_swap_buffers: ['#a6d49a', 'Pinned host buffers that stage activations to and from NVMe.', 'SSDTrain / Fuyou'],
  activation_checkpoints: ['#6a9f58', 'Checkpointed block inputs kept in pinned host memory (unsloth).', 'unsloth offloaded gradient checkpointing'],
  checkpoint_load: ['#bcbd22', 'The pretrained checkpoint in host RAM while it loads.', 'transformers from_pretrained, accelerate'],
  other: ['#cccccc', 'Other memory.', ''],
};

const FALLBACK = ['#888888', 'A component of LLMem\'s estimate.', 'LLMem (IJCAI 2024), docs/llmem.md'];

export function componentInfo(id) {
  const [color, text, source] = COMPONENTS[id] ?? FALLBACK;
  return { color, text, source, name: componentName(id), link: `methodology.html#component-${id}` };
}

// The colour of the constant band under a timeline: what the device holds beside the allocator.
export const CONSTANT_COLOR = '#79706e';
