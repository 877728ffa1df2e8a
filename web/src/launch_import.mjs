// "Check your own": a DeepSpeed config or a `vllm serve` line pasted on the page, read by the
// core's import (docs/api.md) under what the file cannot say (the model, the GPU, the sequence,
// the fine-tuning kind, the requests' lengths: the form's), estimated, and offered to the form.
// Nothing here reads a key itself: the core does. Bundled as the classic script launch_import.js
// (scripts/assemble_dist.mjs), loaded the first time a file is read (classic_scripts.mjs launchReader).
import { escapeHtml, grouped, messageText } from './format.mjs';

const isMapping = (tree) => tree && typeof tree === 'object' && !Array.isArray(tree);

// The file's format, or null: a JSON object is a DeepSpeed config, a line naming vllm is vLLM's,
// a `tune run` line torchtune's; YAML (read by npm's yaml, loaded then) with base_model is
// axolotl's, with distributed_type accelerate's, with a model builder (model._component_)
// torchtune's.
export async function pastedFormat(text, yaml) {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    try {
      const tree = JSON.parse(trimmed);
      return isMapping(tree) ? { format: 'deepspeed', file: tree } : null;
    } catch {
      return null;
    }
  }
  if (/^(\S*\/)?vllm\s/.test(trimmed) || /^python3? -m vllm/.test(trimmed)) return { format: 'vllm', file: trimmed };
  if (/^(\S*\/)?llama-(server|cli)\s/.test(trimmed)) return { format: 'llama_cpp', file: trimmed };
  if (/^tune\s+run\s/.test(trimmed)) return { format: 'torchtune', file: trimmed.replace(/\\\n/g, ' ') };
  try {
    const tree = (await yaml()).parse(trimmed, { version: '1.1' });
    if (isMapping(tree) && 'base_model' in tree) return { format: 'axolotl', file: tree };
    if (isMapping(tree) && 'distributed_type' in tree) return { format: 'accelerate', file: tree };
    if (isMapping(tree) && isMapping(tree.model) && '_component_' in tree.model) return { format: 'torchtune', file: tree };
  } catch {
    return null;
  }
  return null;
}

// What the form gives that the file cannot say.
function formSide(request, format, pasted) {
  const w = request.workload;
  const out = { cluster: { gpu: request.cluster.gpu } };
  if (format === 'accelerate') {
    out.model = request.model;
    out.workload = {};
    for (const key of ['seq_len', 'finetune', 'lora', 'weights', 'grad_ckpt', 'attention', 'framework', 'micro_batch', 'optimizer']) {
      if (w[key] !== undefined) out.workload[key] = w[key];
    }
    delete out.cluster.gpus;
  } else if (format === 'axolotl') {
    out.cluster.gpus = request.cluster.gpus;
    if (request.cluster.gpus_per_node) out.cluster.gpus_per_node = request.cluster.gpus_per_node;
    if (request.parallel?.method?.startsWith('zero')) out.parallel = { method: request.parallel.method };
  } else if (format === 'deepspeed') {
    out.model = request.model;
    out.cluster.gpus = request.cluster.gpus;
    if (request.cluster.gpus_per_node) out.cluster.gpus_per_node = request.cluster.gpus_per_node;
    out.workload = {};
    for (const key of ['seq_len', 'finetune', 'lora', 'weights', 'grad_ckpt', 'attention', 'framework', 'loss', 'keep_outputs']) {
      if (w[key] !== undefined) out.workload[key] = w[key];
    }
    if (w.phase === 'inference') delete out.workload.weights;
  } else if (format === 'torchtune') {
    // A line names its processes; a config file does not: the form's GPUs then.
    if (typeof pasted !== 'string') {
      out.cluster.gpus = request.cluster.gpus;
      if (request.cluster.gpus_per_node) out.cluster.gpus_per_node = request.cluster.gpus_per_node;
      const method = request.parallel?.method ?? '';
      if (request.cluster.gpus > 1) out.parallel = { method: method.startsWith('fsdp') ? method : 'fsdp_full_shard' };
    }
    const fileLength = typeof pasted === 'string' ? /tokenizer\.max_seq_len=\d/.test(pasted)
      : Number.isInteger(pasted?.tokenizer?.max_seq_len);
    if (w.seq_len !== undefined && !fileLength) {
      out.workload = { seq_len: w.seq_len };
    }
  } else if (format === 'llama_cpp') {
    // A GGUF file's line: the model and the requests' lengths are the form's.
    out.model = request.model;
    out.workload = { seq_len: w.seq_len, new_tokens: w.new_tokens ?? 256 };
  } else {
    out.workload = { micro_batch: w.micro_batch ?? 1, seq_len: w.seq_len, new_tokens: w.new_tokens ?? 256 };
  }
  return out;
}

// The form's fields for an imported request (the ones the form has).
export function stateFromImport(request) {
  const w = request.workload ?? {};
  const next = { method: request.parallel?.method ?? 'single', cand: '' };
  if (typeof request.model === 'string') next.model = request.model;
  const gpus = request.cluster?.gpus;
  if (gpus) {
    const perNode = request.cluster.gpus_per_node ?? gpus;
    next.gpus = String(perNode);
    next.nodes = String(Math.max(1, Math.round(gpus / perNode)));
  }
  if (w.micro_batch !== undefined) next.mb = String(w.micro_batch);
  if (w.seq_len !== undefined) next.seq = String(w.seq_len);
  if (w.phase === 'inference') {
    Object.assign(next, { phase: 'inference', fw: w.framework === 'llama_cpp' ? 'llama_cpp' : 'vllm', kv: 'auto', solve: '' });
    if (w.new_tokens !== undefined) next.new = String(w.new_tokens);
    if (w.kv_cache?.dtype) next.kvdtype = w.kv_cache.dtype;
    if (w.weights) next.weights = w.weights;
    if (gpus > 1) next.method = request.parallel.method;
  } else {
    if (w.framework) next.fw = w.framework;
    if (w.compute) next.precision = w.compute;
    if (w.finetune) next.ft = w.finetune === 'lora' && w.weights === 'nf4_double_quant' ? 'qlora'
      : w.finetune === 'lora' && w.weights === 'int8' ? 'lora_int8' : w.finetune;
    if (w.lora?.r) next.r = String(w.lora.r);
    if (w.lora?.dropout !== undefined) next.ldrop = String(w.lora.dropout);
    if (w.lora?.targets) next.targets = Array.isArray(w.lora.targets) ? w.lora.targets.join(',') : w.lora.targets;
    if (w.grad_ckpt !== undefined) next.ckpt = w.grad_ckpt === true ? '1' : w.grad_ckpt === false ? '0' : 'selective';
    if (w.optimizer) next.opt = w.optimizer;
    const o = request.parallel?.offload ?? {};
    Object.assign(next, { oopt: o.optimizer ?? 'none', oparams: o.params ?? 'none', ograd: o.gradients ?? 'none', oact: o.activations ?? 'none' });
  }
  return next;
}

const list = (title, gaps) => (gaps.length
  ? `<p>${title}</p><ul class="notes">${gaps.map((g) => `<li><code>${escapeHtml(g.field)}</code>: ${escapeHtml(g.reason)}</li>`).join('')}</ul>` : '');

// Reads the pasted text against `request` (the form's), shows its estimate, and offers the form.
export async function readPasted(client, request, text, out, apply, yaml) {
  const pasted = await pastedFormat(text, yaml);
  if (!pasted) {
    out.innerHTML = '<p class="error">Paste a DeepSpeed config (JSON), an accelerate, axolotl or torchtune config (YAML), or a <code>tune run …</code>, <code>vllm serve MODEL …</code> or <code>llama-server …</code> line.</p>';
    return;
  }
  const [read] = await client.run([{ command: 'import', ...pasted, request: formSide(request, pasted.format, pasted.file) }]);
  if (!read.ok) {
    out.innerHTML = `<p class="error">${escapeHtml(messageText(read.error.message))}</p>`;
    return;
  }
  const r = read.result;
  const [estimate] = await client.run([{ ...r.request, command: 'estimate' }]);
  const unkept = [];
  if ((r.request.workload?.grad_accumulation ?? 1) > 1) unkept.push(`gradient accumulation (${r.request.workload.grad_accumulation})`);
  if (r.request.parallel?.deepspeed) unkept.push('DeepSpeed\'s bucket sizes');
  const verdict = estimate.ok
    ? `<p data-testid="launch-import-verdict" data-peak-bytes="${estimate.result.peak_bytes}"><strong>${grouped(estimate.result.peak_bytes / 2 ** 30, 1)} GiB per GPU</strong> — ${
      estimate.result.verdict === 'fits' ? 'it fits' : estimate.result.verdict === 'tight' ? 'tight: within the memory, not the headroom' : 'it does not fit'}.</p>`
    : `<p class="error">${escapeHtml(messageText(estimate.error.message))}</p>`;
  out.innerHTML = verdict
    + list('Contradictions in the file:', r.conflicts)
    + list('Read with an assumption:', r.assumed)
    + list('Not modelled (no effect on the estimate):', r.ignored)
    + (estimate.ok ? `<p><button type="button" data-launch-apply>Show it in the calculator</button>${unkept.length
      ? ` <span class="hint">(the form has no field for ${unkept.join(' or ')}: its answer leaves ${unkept.length > 1 ? 'them' : 'it'} out)</span>` : ''}</p>` : '');
  out.querySelector('[data-launch-apply]')?.addEventListener('click', () => apply(stateFromImport(r.request)));
}
