// The calculator's whole state as a flat object of strings, its readable URL query (the same
// names; defaults omitted), and the API requests and CLI command it stands for. Nothing here
// computes memory: requests go to the core.

export const STATE_VERSION = '1';

// Every field, its default and (for choices) the accepted values. The URL and the custom
// element's attributes use these names.
export const FIELDS = {
  model: { default: 'meta-llama/Llama-3.1-8B' },
  // A pasted config.json, deflate-compressed and base64url-encoded (share.mjs); '' = none.
  cfg: { default: '' },
  // The Hub id a config.json was fetched for ('' = pasted by hand): the name it answers under.
  hub: { default: '' },
  gpu: { default: 'rtx-4090' },
  mem: { default: '' },  // custom GPU memory in GiB ('' = the preset's)
  bw: { default: '' },   // custom memory bandwidth in GB/s ('' = the preset's)
  gpus: { default: '1' },  // GPUs per node
  nodes: { default: '1' },
  headroom: { default: '' },  // % of each GPU a plan leaves free ('' = the core's default, 5 %)
  phase: { default: 'train', choices: ['train', 'inference'] },
  mode: { default: 'detailed', choices: ['detailed', 'llmem'] },
  method: {
    default: 'auto',
    choices: ['auto', 'single', 'ddp', 'zero1', 'zero2', 'zero3', 'fsdp_full_shard',
      'fsdp_shard_grad_op', 'tensor_parallel', 'pipeline', 'cdp', 'adp', 'tp'],
  },
  // The plan candidate shown ('' = the plan's choice); any other change returns to the choice.
  cand: { default: '' },
  ft: { default: 'lora', choices: ['full', 'lora', 'qlora', 'lora_int8', 'dora', 'ia3'] },
  r: { default: '16' },
  ldrop: { default: '' },  // LoRA dropout ('' = the framework's default)
  targets: { default: 'all-linear' },
  // PEFT's modules_to_save: trained full copies beside the adapters (embed_tokens, lm_head).
  save: { default: '' },
  precision: { default: 'amp_bf16', choices: ['amp_bf16', 'amp_fp16', 'pure_bf16', 'pure_fp16', 'fp32'] },
  opt: { default: 'adamw', choices: ['adamw', 'adamw_8bit', 'adafactor', 'sgd', 'sgd_momentum'] },
  // Sequences per GPU: '' = the planner chooses (training); serving: sequences at once, '' = 1.
  mb: { default: '' },
  seq: { default: '1024' },
  tgt: { default: '' },  // an encoder-decoder's decoder tokens ('' = as many as seq)
  // Gradient checkpointing: none, every block, or selective (workload.grad_ckpt "selective").
  ckpt: { default: '1', choices: ['0', '1', 'selective', 'auto'] },
  attn: { default: 'sdpa', choices: ['sdpa', 'eager', 'flash'] },
  fw: { default: 'transformers', choices: ['transformers', 'litgpt', 'torchtune', 'unsloth', 'torchtitan', 'vllm', 'llama_cpp', 'autoawq'] },
  // How a transformers training loop takes its loss and holds the outputs (workload.loss,
  // workload.keep_outputs): the HF Trainer's way, a loop keeping `outputs`, the script's own
  // cross-entropy in a LightningModule or in a loop keeping the logits.
  loop: { default: 'trainer', choices: ['trainer', 'outputs', 'own_loss', 'own_loss_kept'] },
  // Library releases where one changed what a step keeps (workload.software; '' = unstated).
  torch: { default: '' },
  bnb: { default: '' },
  peft: { default: '' },
  // transformers' release (framework transformers): its modeling code and generate() (K/V copied
  // for SDPA before 4.54; generate's logits before 4.45).
  tf: { default: '' },
  // 'auto': as the checkpoint stores them (its quantization_config; 16-bit without one).
  weights: {
    default: 'auto',
    choices: ['auto', 'bf16', 'fp16', 'fp32', 'fp8', 'int8', 'nf4', 'nf4_double_quant', 'gptq_4bit', 'awq_4bit', 'mxfp4',
      'gguf_q8_0', 'gguf_q6_k', 'gguf_q5_k_m', 'gguf_q4_k_m', 'gguf_q3_k_m', 'gguf_q2_k'],
  },
  new: { default: '256' },
  kv: { default: 'auto', choices: ['auto', 'dynamic', 'static', 'paged'] },
  kvdtype: { default: 'auto', choices: ['auto', 'bf16', 'fp16', 'fp8', 'int8'] },
  // Serving: what the headline answers (the request as given, the longest context, the most
  // sequences).
  solve: { default: '', choices: ['', 'max_context', 'max_batch'] },
  oopt: { default: 'none', choices: ['none', 'cpu', 'nvme'] },  // offload: optimizer
  oparams: { default: 'none', choices: ['none', 'cpu', 'nvme', 'auto'] },
  ograd: { default: 'none', choices: ['none', 'cpu', 'nvme'] },
  oact: { default: 'none', choices: ['none', 'cpu', 'nvme'] },
  ram: { default: '' },   // host RAM per node in GiB ('' = not checked)
  disk: { default: '' },  // NVMe per node in GiB ('' = not checked)
  metric: { default: 'device_used', choices: ['device_used', 'reserved', 'allocated'] },
  unit: { default: 'gib', choices: ['gib', 'gb'] },
  // The tokens to train on ('' = none given): a plan's training time, and its cost at a price.
  ttok: { default: '' },
  // $ per GPU-hour by GPU preset, "h100-sxm:2.49,rtx-4090:0.39" ('' = none given).
  prices: { default: '' },
};

export function defaultState() {
  return Object.fromEntries(Object.entries(FIELDS).map(([k, f]) => [k, f.default]));
}

// Reads a state from query parameters (or element attributes): unknown names are ignored,
// a choice outside its list falls back to the default (the core validates the rest).
export function stateFrom(lookup) {
  const state = defaultState();
  for (const [key, field] of Object.entries(FIELDS)) {
    const value = lookup(key);
    if (value === null || value === undefined) continue;
    if (field.choices && !field.choices.includes(value)) continue;
    state[key] = String(value);
  }
  if (!/^\d{1,3}$/.test(state.cand)) state.cand = '';
  return state;
}

export function stateFromQuery(search) {
  const params = new URLSearchParams(search);
  return stateFrom((k) => params.get(k));
}

// The readable query: v=1 then every field that differs from its default, in FIELDS order.
export function queryFromState(state) {
  const params = new URLSearchParams({ v: STATE_VERSION });
  for (const [key, field] of Object.entries(FIELDS)) {
    if (state[key] !== field.default) params.set(key, state[key]);
  }
  return `?${params.toString()}`;
}

// The fields that differ from their defaults, among `keys`.
// (A field the state does not keep, such as the GPU's price, counts when it has a value.)
export const changedFields = (state, keys) => keys.filter((k) => (k in FIELDS ? state[k] !== FIELDS[k].default : Boolean(state[k])));

// Whether a run (fine-tuning kind, framework) quantises its 4-bit base with bitsandbytes, whose
// release then matters (transformers and litgpt; torchtune uses torchao's NF4, unsloth its own
// kernels).
export const runsBitsandbytes4bit = (ft, framework) => ft === 'qlora' && ['transformers', 'litgpt'].includes(framework);

export const isServing = (state) => state.phase === 'inference';
export const isLlmem = (state) => state.mode === 'llmem' && !isServing(state);

// $ per GPU-hour by preset id, from the "id:price,..." field.
export function pricesOf(state) {
  const out = {};
  for (const pair of state.prices.split(',')) {
    const [id, price] = pair.split(':');
    if (id && Number(price) > 0) out[id] = Number(price);
  }
  return out;
}

export function withPrice(state, gpu, price) {
  const prices = pricesOf(state);
  if (Number(price) > 0) prices[gpu] = Number(price);
  else delete prices[gpu];
  return Object.entries(prices).map(([id, p]) => `${id}:${p}`).join(',');
}

// A comma-separated box's names, blanks dropped.
const names = (text) => text.split(',').map((t) => t.trim()).filter(Boolean);

const number = (text) => (/^\d+(\.\d+)?$/.test(String(text).trim()) ? Number(text) : text);

function cluster(state) {
  let gpu = state.gpu;
  if (state.mem !== '' || state.bw !== '') {
    gpu = { preset: state.gpu };
    if (state.mem !== '') gpu.memory_bytes = Math.round(Number(state.mem) * 2 ** 30) || state.mem;
    if (state.bw !== '') gpu.memory_bandwidth_bytes_per_s = Number(state.bw) * 1e9 || state.bw;
  }
  const perNode = number(state.gpus);
  const nodes = number(state.nodes);
  const total = typeof perNode === 'number' && typeof nodes === 'number' ? perNode * nodes : perNode;
  const out = { gpu, gpus: total };
  if (nodes !== 1) out.gpus_per_node = perNode;
  if (state.headroom !== '') {
    const value = number(state.headroom);
    out.headroom = typeof value === 'number' ? value / 100 : value;
  }
  const gib = (text) => (Number(text) > 0 ? Math.round(Number(text) * 2 ** 30) : text);
  if (state.ram !== '') out.host_ram_bytes = gib(state.ram);
  if (state.disk !== '') out.nvme_bytes = gib(state.disk);
  return out;
}

// Whether `model` is a pasted encoder-decoder config (T5's config.json says is_encoder_decoder).
export const isEncoderDecoder = (model) => typeof model === 'object' && model?.config?.is_encoder_decoder === true;

function trainingWorkload(state, plan, model) {
  const w = { seq_len: number(state.seq) };
  if (isLlmem(state)) {
    if (!plan) w.micro_batch = number(state.mb || '1');
    return w;
  }
  w.finetune = state.ft === 'qlora' || state.ft === 'lora_int8' ? 'lora' : state.ft;
  // IA3 takes PEFT's default targets (key, value and MLP output projections).
  if (state.ft !== 'full' && state.ft !== 'ia3') {
    const targets = names(state.targets);
    // An empty box means the default targets (q_proj, v_proj): the field is left out.
    w.lora = targets.length ? { r: number(state.r), targets } : { r: number(state.r) };
    if (state.ldrop.trim()) w.lora.dropout = number(state.ldrop);
    const saved = names(state.save);
    if (saved.length) w.lora.modules_to_save = saved;
  }
  if (state.ft === 'qlora') w.weights = 'nf4';
  if (state.ft === 'lora_int8') w.weights = 'int8';  // bitsandbytes LLM.int8 base
  w.compute = state.precision;
  w.optimizer = state.opt;
  w.attention = state.attn;
  w.framework = ['transformers', 'litgpt', 'torchtune', 'unsloth', 'torchtitan'].includes(state.fw) ? state.fw : 'transformers';
  // 'auto' leaves it out: a plan chooses it for each method (an estimate runs without).
  if (state.ckpt === '0') w.grad_ckpt = false;
  if (state.ckpt === '1') w.grad_ckpt = true;
  if (state.ckpt === 'selective') w.grad_ckpt = 'selective';
  if (w.framework === 'transformers') {
    if (state.loop.startsWith('own_loss')) w.loss = 'plain_cross_entropy';
    if (state.loop === 'outputs' || state.loop === 'own_loss_kept') w.keep_outputs = true;
  }
  if (state.tgt !== '' && isEncoderDecoder(model)) w.target_len = number(state.tgt);
  // The releases the form shows for this run: torch and PEFT under transformers, bitsandbytes
  // where it quantises the base.
  const software = {};
  if (w.framework === 'transformers' && state.torch.trim()) software.torch = state.torch.trim();
  if (w.framework === 'transformers' && state.peft.trim()) software.peft = state.peft.trim();
  if (w.framework === 'transformers' && state.tf.trim()) software.transformers = state.tf.trim();
  if (runsBitsandbytes4bit(state.ft, w.framework) && state.bnb.trim()) software.bitsandbytes = state.bnb.trim();
  if (Object.keys(software).length) w.software = software;
  // A micro-batch left empty is the planner's (or, for a fixed method, the solve's) to choose.
  if (state.mb.trim() !== '') w.micro_batch = number(state.mb);
  // A plan's time over so many tokens ("1e9" reads as a billion; the core checks the range).
  if (plan && state.ttok.trim() !== '') {
    const tokens = Number(state.ttok);
    w.train_tokens = Number.isFinite(tokens) ? tokens : state.ttok;
  }
  return w;
}

// Serving: the effective framework (GGUF weights run under llama.cpp, which takes nothing else).
export function servingFramework(state) {
  if (state.weights.startsWith('gguf_')) return 'llama_cpp';
  return ['transformers', 'litgpt', 'vllm', 'llama_cpp', 'autoawq'].includes(state.fw) ? state.fw : 'transformers';
}

function inferenceWorkload(state) {
  const w = {
    phase: 'inference', micro_batch: number(state.mb || '1'),
    seq_len: number(state.seq), new_tokens: number(state.new), attention: state.attn,
  };
  if (state.weights !== 'auto') w.weights = state.weights;
  w.framework = servingFramework(state);
  // llama.cpp runs a GGUF file: its own quantisation, whatever the checkpoint's.
  if (w.framework === 'llama_cpp' && !state.weights.startsWith('gguf_')) w.weights = 'gguf_q4_k_m';
  // AutoAWQ serves AWQ checkpoints: the model's AWQ release, when the weights are left to the
  // checkpoint.
  if (w.framework === 'autoawq' && state.weights === 'auto') w.weights = 'awq_4bit';
  const kv = {};
  if (state.kv !== 'auto') kv.kind = state.kv;
  if (state.kvdtype !== 'auto') kv.dtype = state.kvdtype;
  if (Object.keys(kv).length) w.kv_cache = kv;
  if (['transformers', 'autoawq'].includes(w.framework) && state.tf.trim()) w.software = { transformers: state.tf.trim() };
  return w;
}

// The API request the state stands for: a plan when the method is auto, else an estimate (a
// training estimate without a micro-batch solves for the largest). `model` is a preset id or
// {config, name} for a pasted config.json.
export function requestFor(state, model) {
  const plan = state.method === 'auto';
  const serving = isServing(state);
  const request = { api_version: 1, command: plan ? 'plan' : 'estimate', model, cluster: cluster(state) };
  if (isLlmem(state)) request.mode = 'llmem';
  request.workload = serving ? inferenceWorkload(state) : trainingWorkload(state, plan, model);
  if (!plan) {
    request.parallel = { method: state.method };
    const offload = { optimizer: state.oopt, params: state.oparams, gradients: state.ograd, activations: state.oact };
    if (!serving && !isLlmem(state) && Object.values(offload).some((t) => t !== 'none')) {
      request.parallel.offload = Object.fromEntries(Object.entries(offload).filter(([, t]) => t !== 'none'));
    }
    if (state.metric !== 'device_used' && !isLlmem(state)) request.metric = state.metric;
    if (!serving && !isLlmem(state) && request.workload.micro_batch === undefined) request.solve = 'max_batch';
    if (serving && state.solve) request.solve = state.solve;
  }
  return request;
}

// The estimate that replays one plan candidate, with the step's memory over time where the
// estimator records one (the page's detail for a plan: verdict, chart and timeline all of it).
export function candidateRequest(request, candidate, serving) {
  const out = JSON.parse(JSON.stringify(request));
  out.command = 'estimate';
  if (serving) {
    out.parallel = { method: candidate.method };
    out.cluster.gpus = candidate.gpus;
    delete out.cluster.gpus_per_node;
    delete out.solve;
  } else {
    out.parallel = candidate.parallel;
    out.workload.micro_batch = Math.max(1, candidate.max_micro_batch);
    // What the plan chose for this candidate (gradient checkpointing).
    Object.assign(out.workload, candidate.workload ?? {});
  }
  return withTimeline(out);
}

export const TIMELINE_SAMPLES = 240;

// The request with options.timeline, where the estimator has one (not LLMem mode, vLLM or
// llama.cpp, which reserve fixed buffers).
export function withTimeline(request) {
  const w = request.workload;
  if (request.mode === 'llmem' || ['vllm', 'llama_cpp'].includes(w.framework)) return request;
  return { ...request, options: { ...request.options, timeline: TIMELINE_SAMPLES } };
}

// Serving: the longest context at the batch, and the most sequences at the length, for one layout.
export function servingSolves(estimateRequest) {
  const base = JSON.parse(JSON.stringify(estimateRequest));
  delete base.options;
  return ['max_context', 'max_batch'].map((solve) => ({ ...base, solve }));
}

const shellQuote = (text) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${String(text).replace(/'/g, "'\\''")}'`);

// The gpumem command line that sends the same request (a pasted config is referred to as
// config.json, which the user saves beside it).
export function cliFor(request) {
  const w = request.workload;
  const args = ['gpumem', request.command];
  const model = typeof request.model === 'string' ? request.model : 'config.json';
  args.push('--model', model);
  const gpu = request.cluster.gpu;
  args.push('--gpu', typeof gpu === 'string' ? gpu : gpu.preset);
  args.push('--gpus', String(request.cluster.gpus));
  if (request.cluster.gpus_per_node) args.push('--gpus-per-node', String(request.cluster.gpus_per_node));
  if (request.cluster.headroom !== undefined) args.push('--headroom', String(request.cluster.headroom));
  if (request.cluster.host_ram_bytes) args.push('--host-ram-gib', String(request.cluster.host_ram_bytes / 2 ** 30));
  if (request.cluster.nvme_bytes) args.push('--nvme-gib', String(request.cluster.nvme_bytes / 2 ** 30));
  if (request.mode) args.push('--mode', request.mode);
  if (request.parallel) args.push('--method', request.parallel.method);
  const flags = [['phase', 'phase'], ['micro_batch', 'micro-batch'], ['seq_len', 'seq-len'],
    ['target_len', 'target-len'], ['new_tokens', 'new-tokens'], ['finetune', 'finetune'], ['weights', 'weights'], ['compute', 'compute'],
    ['optimizer', 'optimizer'], ['attention', 'attention'], ['loss', 'loss'], ['framework', 'framework']];
  for (const [field, flag] of flags) {
    if (w[field] !== undefined) args.push(`--${flag}`, String(w[field]));
  }
  if (w.grad_ckpt === true) args.push('--grad-ckpt');
  if (w.grad_ckpt === false && request.command === 'plan') args.push('--no-grad-ckpt');
  if (w.grad_ckpt === 'selective') args.push('--selective-recompute');
  if (w.keep_outputs) args.push('--keep-outputs');
  for (const [library, release] of Object.entries(w.software ?? {})) args.push(`--${library}-version`, release);
  if (w.lora) args.push('--lora-r', String(w.lora.r));
  if (w.lora && w.lora.dropout !== undefined) args.push('--lora-dropout', String(w.lora.dropout));
  if (w.lora && w.lora.targets) args.push('--lora-targets', w.lora.targets.join(','));
  if (w.lora && w.lora.modules_to_save) args.push('--modules-to-save', w.lora.modules_to_save.join(','));
  if (w.kv_cache?.kind) args.push('--kv-cache', w.kv_cache.kind);
  if (w.kv_cache?.dtype) args.push('--kv-dtype', w.kv_cache.dtype);
  for (const [state, target] of Object.entries(request.parallel?.offload ?? {})) args.push(`--offload-${state}`, target);
  if (request.metric) args.push('--metric', request.metric);
  if (request.solve) args.push('--solve', request.solve);
  if (typeof gpu !== 'string') args.push('# custom GPU: use gpumem run --request with the JSON request');
  return args.map((a) => (a.startsWith('#') ? a : shellQuote(a))).join(' ');
}
