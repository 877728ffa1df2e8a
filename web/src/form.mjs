// The calculator's form: the inputs a first-time user needs first (task, model, GPU and how
// many, the fine-tuning kind or the weights, the sequence and the batch), everything else in
// labelled advanced groups that say how many of their settings differ from the defaults. It
// writes the state into the controls and shows what applies; it computes nothing.
import { CHOICES, FIELD_LABELS } from './labels.mjs';
import { escapeHtml, plural } from './format.mjs';
import { FIELDS, changedFields, isEncoderDecoder, isLlmem, isServing, runsBitsandbytes4bit } from './state.mjs';

// The advanced groups, in order: their title and fields.
export const GROUPS = [
  { id: 'precision', title: 'Precision and optimizer', keys: ['precision', 'opt', 'ckpt', 'attn', 'kv', 'kvdtype'] },
  { id: 'lora', title: 'LoRA', keys: ['r', 'ldrop', 'targets', 'save'] },
  { id: 'parallel', title: 'Parallelism and hardware', keys: ['method', 'nodes', 'mem', 'bw', 'headroom'] },
  { id: 'framework', title: 'Framework and library releases', keys: ['fw', 'loop', 'tf', 'torch', 'peft', 'bnb'] },
  { id: 'offload', title: 'Offload and host budgets', keys: ['oopt', 'oparams', 'ograd', 'oact', 'ram', 'disk'] },
  { id: 'cost', title: 'Training time and cost', keys: ['ttok', 'gprice'] },
  { id: 'output', title: 'Estimator, metric and units', keys: ['mode', 'metric', 'unit'] },
];

const TRAIN_ONLY = ['ft', 'r', 'ldrop', 'targets', 'save', 'precision', 'opt', 'ckpt', 'loop', 'tgt', 'oopt', 'oparams',
  'ograd', 'oact', 'ram', 'disk', 'torch', 'bnb', 'peft', 'mode', 'ttok', 'gprice'];
const SERVE_ONLY = ['weights', 'new', 'kv', 'kvdtype', 'solve'];
const OFFLOAD = ['oopt', 'oparams', 'ograd', 'oact'];
// What LLMem's estimator takes: the model, the cluster, the batch and the sequence.
const LLMEM_TAKES = ['model', 'gpu', 'gpus', 'nodes', 'mem', 'bw', 'headroom', 'phase', 'mode', 'method', 'mb', 'seq', 'unit'];

// Whether a field applies to the state (hidden otherwise).
export function applies(key, state, model) {
  const serving = isServing(state);
  if (serving && TRAIN_ONLY.includes(key)) return false;
  if (!serving && SERVE_ONLY.includes(key)) return false;
  if (isLlmem(state) && !LLMEM_TAKES.includes(key)) return false;
  if (['r', 'ldrop', 'targets', 'save'].includes(key) && (state.ft === 'full' || state.ft === 'ia3')) return false;
  // litgpt, torchtune, unsloth and torchtitan run their own loops and losses, and torch 2.
  if (['loop', 'torch', 'peft'].includes(key) && state.fw !== 'transformers') return false;
  // (AutoAWQ serves under transformers' generate: its release still applies.)
  if (key === 'tf' && !['transformers', 'autoawq'].includes(state.fw)) return false;
  // bitsandbytes' release changes what its 4-bit base keeps.
  if (key === 'bnb' && !runsBitsandbytes4bit(state.ft, state.fw)) return false;
  // The decoder's length, for a pasted encoder-decoder (T5) only.
  if (key === 'tgt' && !isEncoderDecoder(model)) return false;
  if (key === 'metric' && state.method === 'auto') return false;
  // A plan's choice is timed over the tokens to train (a fixed method is not timed).
  if (key === 'ttok' && state.method !== 'auto') return false;
  // Offload placements apply to a fixed method; the planner tries them itself.
  if (OFFLOAD.includes(key) && state.method === 'auto') return false;
  // LLMem's planner (its Algorithm 1) searches the batch.
  if (key === 'mb' && isLlmem(state) && state.method === 'auto') return false;
  return true;
}

// The methods the estimator takes for the task.
export function methodsFor(state) {
  if (isServing(state)) return ['auto', 'single', 'tensor_parallel', 'pipeline'];
  if (isLlmem(state)) return ['auto', 'single', 'cdp', 'adp', 'tp'];
  return ['auto', 'single', 'ddp', 'zero1', 'zero2', 'zero3', 'fsdp_full_shard', 'fsdp_shard_grad_op', 'tensor_parallel', 'pipeline'];
}

function select(key) {
  const options = FIELDS[key].choices
    .map((c) => `<option value="${c}">${escapeHtml(CHOICES[key]?.[c] ?? c)}</option>`).join('');
  return `<select id="gm-${key}" data-key="${key}">${options}</select>`;
}

const input = (key, attrs = '') => `<input id="gm-${key}" data-key="${key}" ${attrs}>`;
const number = (key, attrs = '') => input(key, `type="number" inputmode="decimal" ${attrs}`);
const text = (key, attrs = '') => input(key, `type="text" spellcheck="false" autocomplete="off" ${attrs}`);

function field(key, control, label = FIELD_LABELS[key]) {
  return `<div class="field" data-field="${key}"><label for="gm-${key}" id="gm-${key}-label">${escapeHtml(label)}</label>${control}`
    + `<p class="field-error" id="gm-${key}-error" role="alert" hidden></p></div>`;
}

const CONTROLS = {
  gpus: () => number('gpus', 'min="1" step="1"'),
  seq: () => number('seq', 'min="1" step="1"'),
  mb: () => number('mb', 'min="1" step="1" placeholder="auto"'),
  new: () => number('new', 'min="1" step="1"'),
  tgt: () => number('tgt', 'min="1" step="1" placeholder="as the sequence"'),
  r: () => number('r', 'min="1" step="1"'),
  ldrop: () => number('ldrop', 'min="0" max="1" step="any" placeholder="framework default"'),
  targets: () => text('targets', 'aria-describedby="gm-targets-warning"')
    + '<p class="field-warning" id="gm-targets-warning" hidden></p>',
  save: () => text('save', 'placeholder="none, e.g. lm_head"'),
  nodes: () => number('nodes', 'min="1" step="1"'),
  mem: () => number('mem', 'min="0.25" step="any" placeholder="the preset\'s"'),
  bw: () => number('bw', 'min="1" step="any" placeholder="the preset\'s"'),
  headroom: () => number('headroom', 'min="0" max="50" step="any" placeholder="5"'),
  torch: () => text('torch', 'placeholder="2.0 or later"'),
  peft: () => text('peft', 'placeholder="0.12 or later"'),
  tf: () => text('tf', 'placeholder="today\'s"'),
  bnb: () => text('bnb', 'placeholder="before 0.45"'),
  ram: () => number('ram', 'min="1" step="any" placeholder="not checked"'),
  disk: () => number('disk', 'min="1" step="any" placeholder="not checked"'),
  ttok: () => number('ttok', 'min="1" step="any" placeholder="none, e.g. 1e9"'),
  gprice: () => number('gprice', 'min="0" step="0.01" placeholder="none"'),
  gpu: () => '<select id="gm-gpu" data-key="gpu"></select>',
};

const control = (key) => (CONTROLS[key] ?? (() => select(key)))();

function modelField() {
  return `<div class="field model-field" data-field="model">
      <label for="gm-model" id="gm-model-label">${FIELD_LABELS.model}</label>
      <div class="combo">
        <input id="gm-model" type="text" role="combobox" aria-autocomplete="list" aria-expanded="false"
          aria-controls="gm-model-list" autocomplete="off" spellcheck="false" placeholder="Search: llama 70, qwen moe, 8b">
        <ul id="gm-model-list" role="listbox" aria-label="Model presets" hidden></ul>
      </div>
      <p class="field-error" id="gm-model-error" role="alert" hidden></p>
      <details class="paste"><summary>Paste or upload a <code>config.json</code></summary>
        <textarea id="gm-config" rows="6" spellcheck="false" aria-label="config.json" aria-describedby="gm-config-error"
          placeholder='{"model_type": "llama", "hidden_size": 4096, ...}'></textarea>
        <div class="paste-actions"><input type="file" id="gm-config-file" accept=".json,application/json" aria-label="Upload config.json">
          <button type="button" id="gm-config-clear">Back to the presets</button></div>
        <p id="gm-config-error" class="error" role="alert" hidden></p>
        <p id="gm-config-share" class="field-warning" hidden></p>
      </details>
    </div>`;
}

function phaseField() {
  const options = FIELDS.phase.choices.map((c) => `<label class="seg-option"><input type="radio" name="gm-phase" value="${c}" data-key="phase">`
    + `<span>${escapeHtml(CHOICES.phase[c])}</span></label>`).join('');
  return `<fieldset class="seg" data-field="phase"><legend class="visually-hidden">${FIELD_LABELS.phase}</legend>${options}</fieldset>`;
}

// The inputs a first-time user needs.
export function primaryHtml() {
  return `<div class="primary" role="group" aria-label="What to estimate">
    ${phaseField()}
    ${modelField()}
    <div class="row gpu-row">${field('gpu', control('gpu'))}${field('gpus', control('gpus'))}</div>
    <div class="row">${field('ft', control('ft'))}${field('weights', control('weights'))}${field('solve', control('solve'))}</div>
    <div class="row">${field('seq', control('seq'))}${field('new', control('new'))}${field('mb', control('mb'))}${field('tgt', control('tgt'))}</div>
  </div>`;
}

// Everything else, in labelled groups.
export function advancedHtml() {
  const groups = GROUPS.map((g) => `<details class="group" data-group="${g.id}">
      <summary><span class="group-title">${escapeHtml(g.title)}</span> <span class="badge" data-badge="${g.id}"></span></summary>
      <div class="group-fields">${g.keys.map((k) => field(k, control(k))).join('')}</div>
    </details>`).join('');
  return `<div class="advanced" role="group" aria-label="More settings">${groups}</div>`;
}

// Writes the state into the controls (only where they differ, so typing is not disturbed), shows
// the fields that apply with their labels for the task, and counts each group's changed settings.
export function syncForm(root, state, model) {
  const serving = isServing(state);
  for (const el of root.querySelectorAll('[data-key]')) {
    const key = el.dataset.key;
    if (el.type === 'radio') el.checked = el.value === state[key];
    else if (el.value !== state[key] && el.getRootNode().activeElement !== el) el.value = state[key];
  }
  const methods = methodsFor(state);
  for (const option of root.querySelector('#gm-method').options) option.hidden = !methods.includes(option.value);
  for (const el of root.querySelectorAll('[data-field]')) el.hidden = !applies(el.dataset.field, state, model);
  const label = (key, words) => { root.querySelector(`#gm-${key}-label`).textContent = words; };
  label('seq', serving ? 'Prompt tokens' : FIELD_LABELS.seq);
  label('mb', serving ? 'Sequences at once' : FIELD_LABELS.mb);
  root.querySelector('#gm-mb').placeholder = serving || isLlmem(state) ? '1' : 'auto';
  for (const group of GROUPS) {
    const shown = group.keys.filter((k) => applies(k, state, model));
    const el = root.querySelector(`[data-group="${group.id}"]`);
    el.hidden = shown.length === 0;
    const changed = changedFields(state, shown).length;
    el.querySelector('.badge').textContent = changed ? `${plural(changed, 'change')}` : '';
  }
}

// The form field that shows an API error, with its group opened; false when none does.
export function showFieldError(root, key, message) {
  const el = root.querySelector(`#gm-${key}-error`);
  if (!el || el.closest('[data-field]')?.hidden) return false;
  el.textContent = message;
  el.hidden = false;
  root.querySelector(`#gm-${key}`)?.setAttribute('aria-invalid', 'true');
  const group = el.closest('details.group');
  if (group) group.open = true;
  return true;
}

export function clearFieldErrors(root) {
  for (const el of root.querySelectorAll('.field-error')) el.hidden = true;
  for (const el of root.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}
