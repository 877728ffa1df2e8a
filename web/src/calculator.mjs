// The calculator: a form over the state (state.mjs), the facade's answer rendered as a verdict,
// the plan's candidates, a chart per GPU rank and each component explained. Mounted by the page
// (index.html, embed.html) and by the custom element. It computes nothing itself.
import { chartHtml, hostChartHtml } from './chart.mjs';
import { componentInfo } from './components.mjs';
import { billions, count, escapeHtml, size } from './format.mjs';
import { FIELDS, isEncoderDecoder, requestFor, runsBitsandbytes4bit } from './state.mjs';

const LABELS = {
  phase: { train: 'Fine-tune', inference: 'Inference' },
  mode: { detailed: 'Detailed', llmem: 'LLMem (paper)' },
  method: {
    auto: 'Auto (plan)', single: 'One GPU', ddp: 'DDP', zero1: 'ZeRO-1', zero2: 'ZeRO-2', zero3: 'ZeRO-3',
    fsdp_full_shard: 'FSDP full shard', fsdp_shard_grad_op: 'FSDP grad-op', tensor_parallel: 'Tensor parallel',
    pipeline: 'Pipeline', cdp: 'LLMem CDP', adp: 'LLMem ADP', tp: 'LLMem TP',
  },
  ft: { full: 'Full', lora: 'LoRA', qlora: 'QLoRA (4-bit base)', lora_int8: 'LoRA (8-bit base)', dora: 'DoRA', ia3: 'IA3' },
  precision: { amp_bf16: 'AMP bf16', amp_fp16: 'AMP fp16', pure_bf16: 'bf16 (pure)', pure_fp16: 'fp16 (pure)', fp32: 'fp32' },
  opt: { adamw: 'AdamW', adamw_8bit: 'AdamW 8-bit', adafactor: 'Adafactor', sgd: 'SGD', sgd_momentum: 'SGD + momentum' },
  attn: { sdpa: 'SDPA', eager: 'Eager', flash: 'FlashAttention' },
  ckpt: { 0: 'Off', 1: 'Every block', selective: 'Selective (attention core; torchtitan: per op)' },
  fw: {
    transformers: 'transformers / PEFT', litgpt: 'litgpt', torchtune: 'torchtune', unsloth: 'unsloth (LoRA)',
    torchtitan: 'torchtitan (full)', vllm: 'vLLM', llama_cpp: 'llama.cpp',
  },
  loop: {
    trainer: 'HF Trainer / TRL', outputs: 'Loop keeping outputs (accelerate, PEFT)',
    own_loss: 'Own cross-entropy (Lightning)', own_loss_kept: 'Own cross-entropy, logits kept',
  },
  kv: { auto: 'Framework default', dynamic: 'Grown (dynamic)', static: 'Preallocated (static)', paged: 'Paged (vLLM)' },
  kvdtype: { auto: 'Compute dtype' },
  oopt: { none: 'GPU', cpu: 'Host RAM', nvme: 'NVMe' },
  oparams: { none: 'GPU', cpu: 'Host RAM', nvme: 'NVMe', auto: 'Gemini auto placement' },
  ograd: { none: 'With the optimizer', cpu: 'Host RAM', nvme: 'NVMe' },
  oact: { none: 'GPU', cpu: 'Host RAM', nvme: 'NVMe' },
  metric: { device_used: 'nvidia-smi (device used)', reserved: 'PyTorch reserved', allocated: 'PyTorch allocated' },
  unit: { gib: 'GiB', gb: 'GB' },
};

const TRAIN_ONLY = ['ft', 'r', 'ldrop', 'targets', 'save', 'precision', 'opt', 'ckpt', 'loop', 'tgt', 'oopt', 'oparams', 'ograd', 'oact',
  'torch', 'bnb', 'peft'];
const OFFLOAD = ['oopt', 'oparams', 'ograd', 'oact'];
const INFERENCE_ONLY = ['weights', 'new', 'kv', 'kvdtype'];
const DETAILED_ONLY = ['ft', 'r', 'ldrop', 'targets', 'save', 'precision', 'opt', 'ckpt', 'attn', 'fw', 'loop', 'tgt', 'metric', 'oopt',
  'oparams', 'ograd', 'oact', 'ram', 'disk', 'torch', 'bnb', 'peft'];

function select(key, id) {
  const options = FIELDS[key].choices
    .map((c) => `<option value="${c}">${escapeHtml(LABELS[key]?.[c] ?? c)}</option>`).join('');
  return `<select id="${id}" data-key="${key}">${options}</select>`;
}

function field(key, label, control) {
  return `<div class="field" data-field="${key}"><label for="gm-${key}">${label}</label>${control}</div>`;
}

const text = (key, attrs = '') => `<input id="gm-${key}" data-key="${key}" ${attrs}>`;

function formHtml(compact) {
  return `
  <form class="inputs${compact ? ' compact' : ''}" novalidate>
    <fieldset><legend>Model</legend>
      ${field('model', 'Preset', `<input type="search" id="gm-model-filter" placeholder="Filter presets…" aria-label="Filter model presets">
        <select id="gm-model" data-key="model"></select>`)}
      <details class="paste"><summary>…or paste / upload a <code>config.json</code></summary>
        <textarea id="gm-config" rows="8" spellcheck="false" aria-label="config.json" aria-describedby="gm-config-error"
          placeholder='{"model_type": "llama", "hidden_size": 4096, ...}'></textarea>
        <input type="file" id="gm-config-file" accept=".json,application/json" aria-label="Upload config.json">
        <p id="gm-config-error" class="error" role="alert" hidden></p>
      </details>
    </fieldset>
    <fieldset><legend>Hardware</legend>
      ${field('gpu', 'GPU', '<select id="gm-gpu" data-key="gpu"></select>')}
      ${field('mem', 'Custom memory (GiB)', text('mem', 'type="number" min="0.25" step="any" placeholder="preset"'))}
      ${field('bw', 'Custom bandwidth (GB/s)', text('bw', 'type="number" min="1" step="any" placeholder="preset"'))}
      ${field('gpus', 'GPUs per node', text('gpus', 'type="number" min="1" step="1"'))}
      ${field('nodes', 'Nodes', text('nodes', 'type="number" min="1" step="1"'))}
      ${field('ram', 'Host RAM per node (GiB)', text('ram', 'type="number" min="1" step="any" placeholder="not checked"'))}
      ${field('disk', 'NVMe per node (GiB)', text('disk', 'type="number" min="1" step="any" placeholder="not checked"'))}
    </fieldset>
    <fieldset><legend>Workload</legend>
      ${field('phase', 'Phase', select('phase', 'gm-phase'))}
      ${field('ft', 'Fine-tuning', select('ft', 'gm-ft'))}
      ${field('r', 'LoRA rank', text('r', 'type="number" min="1" step="1"'))}
      ${field('ldrop', 'LoRA dropout', text('ldrop', 'type="number" min="0" max="1" step="any" placeholder="framework default"'))}
      ${field('targets', 'LoRA targets', text('targets', 'type="text" spellcheck="false"'))}
      ${field('save', 'Trained copies (modules_to_save)', text('save', 'type="text" spellcheck="false" placeholder="none, e.g. lm_head"'))}
      ${field('weights', 'Weights', select('weights', 'gm-weights'))}
      ${field('precision', 'Precision', select('precision', 'gm-precision'))}
      ${field('opt', 'Optimizer', select('opt', 'gm-opt'))}
      ${field('mb', 'Micro-batch (sequences)', text('mb', 'type="number" min="1" step="1"'))}
      ${field('seq', 'Sequence / prompt tokens', text('seq', 'type="number" min="1" step="1"'))}
      ${field('tgt', 'Decoder tokens (T5)', text('tgt', 'type="number" min="1" step="1" placeholder="as the sequence"'))}
      ${field('new', 'New tokens', text('new', 'type="number" min="1" step="1"'))}
      ${field('kv', 'KV cache', select('kv', 'gm-kv'))}
      ${field('kvdtype', 'KV cache dtype', select('kvdtype', 'gm-kvdtype'))}
      ${field('ckpt', 'Gradient checkpointing', select('ckpt', 'gm-ckpt'))}
      ${field('attn', 'Attention', select('attn', 'gm-attn'))}
      ${field('fw', 'Framework', select('fw', 'gm-fw'))}
      ${field('loop', 'Training loop', select('loop', 'gm-loop'))}
      ${field('torch', 'torch release', text('torch', 'type="text" spellcheck="false" placeholder="2.0 or later"'))}
      ${field('peft', 'PEFT release', text('peft', 'type="text" spellcheck="false" placeholder="0.12 or later"'))}
      ${field('bnb', 'bitsandbytes release', text('bnb', 'type="text" spellcheck="false" placeholder="before 0.45"'))}
    </fieldset>
    <fieldset><legend>Estimate</legend>
      ${field('mode', 'Estimator', select('mode', 'gm-mode'))}
      ${field('method', 'Method', select('method', 'gm-method'))}
      ${field('metric', 'Metric', select('metric', 'gm-metric'))}
      ${field('unit', 'Units', select('unit', 'gm-unit'))}
      ${field('oopt', 'Offload: optimizer states', select('oopt', 'gm-oopt'))}
      ${field('oparams', 'Offload: parameters', select('oparams', 'gm-oparams'))}
      ${field('ograd', 'Offload: gradients', select('ograd', 'gm-ograd'))}
      ${field('oact', 'Offload: activations', select('oact', 'gm-oact'))}
    </fieldset>
  </form>
  <section class="result" aria-live="polite" aria-busy="true" data-testid="result"><p>Loading the WebAssembly core…</p></section>`;
}

function fillModels(selectEl, models, filter = '') {
  const wanted = filter.trim().toLowerCase();
  const families = new Map();
  for (const m of models) {
    if (wanted && !`${m.id} ${m.family}`.toLowerCase().includes(wanted)) continue;
    if (!families.has(m.family)) families.set(m.family, []);
    families.get(m.family).push(m);
  }
  const current = selectEl.value;
  selectEl.replaceChildren();
  for (const [family, members] of [...families].sort(([a], [b]) => a.localeCompare(b))) {
    const group = document.createElement('optgroup');
    group.label = family;
    for (const m of members.sort((a, b) => a.total_params - b.total_params)) {
      group.append(new Option(`${m.id} — ${billions(m.total_params)}`, m.id));
    }
    selectEl.append(group);
  }
  if (current) selectEl.value = current;
}

function fillGpus(selectEl, gpus) {
  selectEl.replaceChildren(...gpus.map((g) => new Option(`${g.name} — ${(g.memory_bytes / 2 ** 30).toFixed(0)} GiB`, g.id)));
}

// The verdict, the plan and the chart of one rank list.
function verdictHtml(peak, usable, fits, unit, offload, kv) {
  const margin = usable - peak;
  if (!fits && margin >= 0 && kv?.capacity_tokens !== undefined) {
    // vLLM: the card holds its reservation; the paged KV cache is what is short.
    return `<p class="verdict nofit" data-testid="verdict" data-peak-bytes="${peak}" data-fits="false"><strong>Does not fit.</strong> vLLM's KV cache holds ${count(kv.capacity_tokens)} tokens, ${count(kv.concurrent_sequences)} sequences of this length at once — fewer than the micro-batch.</p>`;
  }
  if (!fits && margin >= 0 && !offload) {
    return `<p class="verdict nofit" data-testid="verdict" data-peak-bytes="${peak}" data-fits="false"><strong>Does not fit.</strong> ${escapeHtml(size(peak, unit))} of ${escapeHtml(size(usable, unit))} per GPU, but another limit is exceeded (see above).</p>`;
  }
  if (!fits && margin >= 0 && offload) {
    // The GPU holds it; the host budgets do not.
    const over = [];
    if (!offload.fits_host_ram) over.push(`host RAM (${size(offload.host_bytes_per_node, unit)} per node)`);
    if (!offload.fits_nvme) over.push(`NVMe (${size(offload.nvme_bytes_per_node, unit)} per node)`);
    return `<p class="verdict nofit" data-testid="verdict" data-peak-bytes="${peak}" data-fits="false"><strong>Does not fit.</strong> The GPU holds ${escapeHtml(size(peak, unit))} of ${escapeHtml(size(usable, unit))}, but the ${escapeHtml(over.join(' and '))} exceeds the budget.</p>`;
  }
  return fits
    ? `<p class="verdict fits" data-testid="verdict" data-peak-bytes="${peak}" data-fits="true"><strong>Fits.</strong> ${escapeHtml(size(peak, unit))} of ${escapeHtml(size(usable, unit))} per GPU — ${escapeHtml(size(margin, unit))} to spare.</p>`
    : `<p class="verdict nofit" data-testid="verdict" data-peak-bytes="${peak}" data-fits="false"><strong>Does not fit.</strong> ${escapeHtml(size(peak, unit))} needed per GPU, ${escapeHtml(size(usable, unit))} available — ${escapeHtml(size(-margin, unit))} short.</p>`;
}

function explanations(ranks) {
  const names = [...new Set(ranks.flatMap((r) => Object.keys(r.components)))];
  return `<details class="explain" open><summary>What each component is</summary><dl>${names.map((n) => {
    const info = componentInfo(n);
    return `<dt>${escapeHtml(n)}</dt><dd>${escapeHtml(info.text)}${info.source ? ` <span class="source">Source: ${escapeHtml(info.source)}</span>` : ''}</dd>`;
  }).join('')}</dl></details>`;
}

// "optimizer → NVMe, params → host RAM" for a plan candidate's offload.
function placementText(offload) {
  return ['optimizer', 'params', 'gradients', 'activations'].filter((k) => offload[k] !== 'none')
    .map((k) => `${k} → ${offload[k] === 'cpu' ? 'host RAM' : 'NVMe'}`).join(', ');
}

function candidateRows(result, selected, inference, unit) {
  return result.candidates.map((c, i) => {
    const name = inference ? (c.gpus === 1 ? LABELS.method.single : `${LABELS.method[c.method] ?? c.method} × ${c.gpus}`)
      : `${LABELS.method[c.method] ?? c.method}${c.tp > 1 ? ` (TP ${c.tp})` : ''}${c.cp > 1 ? ` (CP ${c.cp})` : ''}${c.offload ? ` + ${placementText(c.offload)}` : ''}`;
    const fits = c.valid === false ? 'invalid' : c.fits ? 'yes' : 'no';
    const cells = inference
      ? `<td class="num">${c.gpus}</td><td>${fits}</td><td class="num">${c.valid === false ? '–' : escapeHtml(size(c.peak_bytes, unit))}</td>`
      : `<td>${fits}</td><td class="num">${c.valid === false ? '–' : c.max_micro_batch}</td><td class="num">${c.valid === false ? '–' : escapeHtml(size(c.peak_bytes, unit))}</td><td class="num">${c.valid === false ? '–' : count(Math.round(c.tokens_per_s))}</td>`;
    return `<tr class="${i === selected ? 'selected' : ''}"><td><button type="button" data-candidate="${i}" aria-pressed="${i === selected}">${escapeHtml(name)}</button></td>${cells}</tr>`;
  }).join('');
}

export function mountCalculator(root, { gpumem, state, compact = false, onChange = () => {} }) {
  root.innerHTML = formHtml(compact);
  const $ = (sel) => root.querySelector(sel);
  // The preset list (every config parsed and counted) is filled after the first result; until
  // then the select holds the current model alone.
  let models = [];
  $('#gm-model').append(new Option(state.model, state.model));
  fillGpus($('#gm-gpu'), gpumem.gpus());
  let pasted = null;  // {config, name} of a pasted config.json
  let selected = -1;  // the plan candidate shown
  let timer = null;

  const controls = () => [...root.querySelectorAll('[data-key]')];
  const writeForm = () => {
    for (const el of controls()) {
      const key = el.dataset.key;
      if (el.value !== state[key]) el.value = state[key];
    }
    if ($('#gm-model').value !== state.model && models.length) {
      fillModels($('#gm-model'), models);
      $('#gm-model').value = state.model;
    }
    const inference = state.phase === 'inference';
    const llmem = state.mode === 'llmem' && !inference;
    // The methods the chosen estimator takes.
    const methods = inference ? ['auto', 'single', 'tensor_parallel', 'pipeline']
      : llmem ? ['auto', 'single', 'cdp', 'adp', 'tp']
        : ['auto', 'single', 'ddp', 'zero1', 'zero2', 'zero3', 'fsdp_full_shard', 'fsdp_shard_grad_op',
          'tensor_parallel', 'pipeline'];
    for (const option of $('#gm-method').options) option.hidden = !methods.includes(option.value);
    for (const el of root.querySelectorAll('[data-field]')) {
      const key = el.dataset.field;
      let hidden = (inference && TRAIN_ONLY.includes(key)) || (!inference && INFERENCE_ONLY.includes(key));
      if (llmem && DETAILED_ONLY.includes(key)) hidden = true;
      if (['r', 'ldrop', 'targets', 'save'].includes(key) && (state.ft === 'full' || state.ft === 'ia3')) hidden = true;
      if (key === 'mode' && inference) hidden = true;
      // litgpt, torchtune, unsloth and torchtitan run their own loops and losses, their own
      // adapters, and torch 2.
      if (['loop', 'torch', 'peft'].includes(key) && state.fw !== 'transformers') hidden = true;
      // bitsandbytes' release changes what its 4-bit base keeps.
      if (key === 'bnb' && !runsBitsandbytes4bit(state.ft, state.fw)) hidden = true;
      // The decoder's length, for a pasted encoder-decoder (T5) only.
      if (key === 'tgt' && !isEncoderDecoder(pasted)) hidden = true;
      if (key === 'mb' && state.method === 'auto' && !inference) hidden = true;
      if (key === 'metric' && state.method === 'auto') hidden = true;
      // Offload placements apply to a fixed method; the plan tries them itself.
      if (OFFLOAD.includes(key) && state.method === 'auto') hidden = true;
      el.hidden = hidden;
    }
  };

  const model = () => pasted ?? state.model;
  const request = () => requestFor(state, model());

  const showError = (error) => {
    const where = error.field ? ` <code>${escapeHtml(error.field)}</code>` : '';
    $('.result').innerHTML = `<p class="error" role="alert" data-testid="error">${escapeHtml(error.message)}${where}</p>`;
    if (pasted && String(error.field).startsWith('model')) {
      $('#gm-config-error').textContent = `${error.message} (${error.code})`;
      $('#gm-config-error').hidden = false;
    }
  };

  const render = (response, req) => {
    const r = response.result;
    const unit = state.unit;
    const usable = r.cluster.usable_bytes;
    const inference = req.workload.phase === 'inference';
    const m = r.model;
    const title = `<h2>${escapeHtml(m.id ?? m.name ?? 'config.json')} <small>${escapeHtml(m.architecture ?? '')} · ${billions(m.total_params)} parameters</small></h2>`;
    const warnings = response.warnings.map((w) => `<p class="warning">${escapeHtml(w)}</p>`).join('');
    let body = '';
    let ranks = r.per_gpu;
    if (req.command === 'plan') {
      if (r.candidates.length && (selected < 0 || selected >= r.candidates.length)) {
        const chosen = !r.choice ? -1 : inference
          ? r.candidates.findIndex((c) => c.method === r.choice.method && c.gpus === r.choice.gpus)
          : r.choice.candidate;
        selected = chosen >= 0 ? chosen : 0;
      }
      const c = r.candidates[selected];
      const choice = r.choice
        ? inference
          ? `<p class="choice" data-testid="choice"><strong>${escapeHtml(LABELS.method[r.choice.method] ?? r.choice.method)} on ${r.choice.gpus} GPU${r.choice.gpus > 1 ? 's' : ''}.</strong> ${escapeHtml(r.reason)}</p>`
          : `<p class="choice" data-testid="choice"><strong>${escapeHtml(LABELS.method[r.choice.method] ?? r.choice.method)}${r.choice.tp > 1 ? ` (TP ${r.choice.tp})` : ''}${r.choice.cp > 1 ? ` (CP ${r.choice.cp})` : ''}${r.choice.offload ? ' with offloading' : ''}</strong>, micro-batch ${r.choice.max_micro_batch}, about ${count(Math.round(r.choice.tokens_per_s))} tokens/s. ${escapeHtml(r.reason)}</p>`
        : `<p class="choice nofit" data-testid="choice">${escapeHtml(r.reason)}</p>`;
      const head = inference
        ? '<tr><th>Layout</th><th class="num">GPUs</th><th>Fits</th><th class="num">Peak per GPU</th></tr>'
        : '<tr><th>Method</th><th>Fits</th><th class="num">Max micro-batch</th><th class="num">Peak per GPU</th><th class="num">Tokens/s</th></tr>';
      const table = `<table class="candidates" data-testid="candidates"><caption>Every candidate (select one to see it)</caption><thead>${head}</thead><tbody>${candidateRows(r, selected, inference, unit)}</tbody></table>`;
      if (inference) {
        // The inference plan lists peaks; the chosen layout's components come from its estimate.
        const pick = { ...req, command: 'estimate', parallel: { method: c.method } };
        pick.cluster = { ...req.cluster, gpus: c.gpus };
        delete pick.cluster.gpus_per_node;
        ranks = c.valid === false ? [] : gpumem.request(pick).result.per_gpu;
      } else {
        ranks = c.per_gpu ?? [];
      }
      const peak = c.valid === false ? 0 : c.peak_bytes;
      const host = c.offload
        ? `<p data-testid="offload">Offloaded: ${escapeHtml(placementText(c.offload))}; ${escapeHtml(size(c.offload.host_bytes_per_node, unit))} of host RAM and ${escapeHtml(size(c.offload.nvme_bytes_per_node, unit))} of NVMe per node.</p>`
        : '';
      const offload = r.offload
        ? `<p class="offload" data-testid="offload">With CPU offload (${escapeHtml(r.offload.moves)}), ${escapeHtml(LABELS.method[r.offload.method] ?? r.offload.method)} would need ${escapeHtml(size(r.offload.gpu_peak_bytes, unit))} per GPU and ${escapeHtml(size(r.offload.host_bytes_per_node, unit))} of host RAM per node${r.offload.sufficient ? '' : ' — and still would not fit'}.</p>`
        : '';
      body = `${choice}${offload}${host}${c.valid === false ? `<p class="error">${escapeHtml(c.note ?? 'invalid')}</p>` : verdictHtml(peak, usable, c.fits, unit)}${table}`;
    } else {
      body = verdictHtml(r.peak_bytes, usable, r.fits, unit, r.offload, r.kv_cache);
      if (r.peak_phase) body += `<p class="phase">The peak falls in the <strong>${escapeHtml(r.peak_phase)}</strong>.</p>`;
      if (r.step_time) body += `<p>About ${count(Math.round(r.step_time.tokens_per_s))} tokens/s.</p>`;
      if (r.offload) {
        const o = r.offload;
        body += `<p data-testid="offload">Offloaded: ${escapeHtml(size(o.host_bytes_per_node, unit))} of host RAM${o.fits_host_ram ? '' : ' (over the budget)'} and ${escapeHtml(size(o.nvme_bytes_per_node, unit))} of NVMe${o.fits_nvme ? '' : ' (over the budget)'} per node; each step adds ${o.per_step.pcie_s.toFixed(2)} s of PCIe copies (overlapping the compute), ${o.per_step.nvme_s.toFixed(2)} s of NVMe and ${o.per_step.cpu_optimizer_s.toFixed(2)} s of CPU optimizer.</p>`;
      }
      if (r.kv_cache) {
        body += `<p data-testid="kv">KV cache ${escapeHtml(size(r.kv_cache.bytes, unit))} (${count(r.kv_cache.bytes_per_token)} bytes per token per sequence)${r.kv_cache.capacity_tokens !== undefined ? `; room for ${count(r.kv_cache.capacity_tokens)} tokens = ${count(r.kv_cache.concurrent_sequences)} sequences of this length at once` : ''}.</p>`;
      }
    }
    let chart = ranks.length ? chartHtml(ranks, usable, unit) + explanations(ranks) : '';
    if (r.offload) {
      chart += hostChartHtml(r.offload, { host: r.cluster.host_ram_bytes ?? 0, nvme: r.cluster.nvme_bytes ?? 0 }, unit);
    }
    // Notes: a list (detailed mode) or one line per component (LLMem mode).
    const noteLines = Array.isArray(r.notes) ? r.notes
      : Object.entries(r.notes ?? {}).map(([name, text]) => `${name}: ${typeof text === 'string' ? text : JSON.stringify(text)}`);
    const notes = noteLines.map((n) => `<li>${escapeHtml(n)}</li>`).join('');
    $('.result').innerHTML = `${title}${warnings}${body}${chart}${notes ? `<details class="notes"><summary>Notes</summary><ul>${notes}</ul></details>` : ''}`;
    $('.result').setAttribute('aria-busy', 'false');
  };

  const compute = () => {
    const req = request();
    $('#gm-config-error').hidden = true;
    try {
      render(gpumem.request(req), req);
    } catch (error) {
      if (error?.name !== 'GpumemError') throw error;
      showError(error);
    }
  };

  const changed = (immediate = false) => {
    writeForm();
    onChange({ ...state });
    clearTimeout(timer);
    if (immediate) compute();
    else timer = setTimeout(compute, 120);
  };

  root.addEventListener('input', (event) => {
    const el = event.target;
    if (el.id === 'gm-model-filter') {
      fillModels($('#gm-model'), models, el.value);
      return;
    }
    if (el.id === 'gm-config') {
      readPasted(el.value);
      return;
    }
    const key = el.dataset?.key;
    if (!key) return;
    state[key] = el.value;
    if (key === 'model') pasted = null;
    if (['phase', 'mode', 'method', 'gpus', 'nodes', 'model'].includes(key)) selected = -1;
    changed();
  });
  root.addEventListener('change', (event) => {
    if (event.target.id === 'gm-config-file' && event.target.files[0]) {
      event.target.files[0].text().then((t) => {
        $('#gm-config').value = t;
        readPasted(t);
      });
    }
  });
  root.addEventListener('click', (event) => {
    const button = event.target.closest?.('[data-candidate]');
    if (!button) return;
    selected = Number(button.dataset.candidate);
    compute();
  });

  function readPasted(textValue) {
    if (!textValue.trim()) {
      pasted = null;
      changed();
      return;
    }
    let config;
    try {
      config = JSON.parse(textValue);
    } catch (syntax) {
      $('#gm-config-error').textContent = `Not valid JSON: ${syntax.message}`;
      $('#gm-config-error').hidden = false;
      return;
    }
    pasted = { config, name: 'pasted config.json' };
    selected = -1;
    changed(true);
  }

  writeForm();
  compute();
  performance.mark('gpumem-first-result');
  setTimeout(() => {
    models = gpumem.models();
    fillModels($('#gm-model'), models, $('#gm-model-filter').value);
    $('#gm-model').value = state.model;
  });
  return {
    request,
    set(next) {
      Object.assign(state, next);
      pasted = null;
      selected = -1;
      changed(true);
    },
  };
}
