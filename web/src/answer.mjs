// The answer as a person reads it, from a view of the core's responses (calculator.mjs builds it):
// the verdict against the GPU's memory and the headroom, the method and micro-batch (or the
// serving capacity), the chart, then the candidates, the memory over the step, what the peak
// holds and the notes. Method, verdict, chart and highlighted row all come from one candidate:
// the one `view.shown` names, replayed as an estimate (`view.detail`).
import { chartHtml, hostChartHtml, rankLabel } from './chart.mjs';
import { componentInfo } from './components.mjs';
import { billions, count, escapeHtml, money, percent, plural, size } from './format.mjs';
import { CHOICES, FIELD_LABELS, LIMITS, componentName, formFieldOf, phaseName } from './labels.mjs';
import { timelineHtml } from './timeline_chart.mjs';

const methodName = (id) => CHOICES.method[id]?.replace(/^Auto.*/, 'Auto') ?? id;

// The core's notes and the sources as prose: an API field becomes the form's label, and the
// identifiers of the frameworks' code (prepare_model_for_kbit_training, loss_utils) are set as
// code, not words.
export function prose(text) {
  return escapeHtml(text)
    .replace(/\b(?:workload|cluster|parallel|options)\.[a-z_.]+[a-z_]/g, (field) => {
      const key = formFieldOf(field);
      return key ? `“${FIELD_LABELS[key]}”` : `<code>${field}</code>`;
    })
    .replace(/(?<![\w.<“])([A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*)(?![\w”])/g, '<code>$1</code>');
}

// A serving layout in words.
export function layoutName(c) {
  if (c.method === 'single') return 'One GPU';
  return `${c.method === 'pipeline' ? 'Layers split' : 'Tensor parallelism'} over ${plural(c.gpus, 'GPU')}`;
}

// Host memory the run needs but no budget was stated for.
function uncheckedNeeds(detail, unit) {
  const o = detail.offload;
  if (!o) return [];
  const needs = [];
  if (!o.host_ram_checked && Math.max(o.host_bytes_per_node, o.load_host_bytes_per_node ?? 0) > 0) {
    needs.push(`${size(Math.max(o.host_bytes_per_node, o.load_host_bytes_per_node ?? 0), unit)} of host RAM`);
  }
  if (!o.nvme_checked && o.nvme_bytes_per_node > 0) needs.push(`${size(o.nvme_bytes_per_node, unit)} of NVMe`);
  return needs;
}

// {state: fits | tight | unchecked | no | invalid, title, text} for the shown answer.
export function verdictOf(view, unit) {
  const d = view.detail;
  if (!d) {
    return { state: 'invalid', title: 'Cannot run this way', text: view.candidate?.note ?? view.detailError ?? 'This layout is not possible here.' };
  }
  const memory = d.cluster.gpu.memory_bytes;
  const used = d.device_used_bytes;
  const spare = memory - used;
  const headroom = d.cluster.headroom_bytes;
  const per = `${size(used, unit)} of ${size(memory, unit)} per GPU`;
  const kv = d.kv_cache;
  const paged = kv?.capacity_tokens !== undefined;
  const serveText = paged
    ? ` vLLM takes ${percent(kv.gpu_memory_utilization)} of the card (${per}); its KV cache holds ${count(kv.capacity_tokens)} tokens: ${plural(kv.concurrent_sequences, 'sequence')} of ${count(d.workload.seq_len + d.workload.new_tokens)} tokens at once.`
    : '';
  if (d.verdict === 'does_not_fit') {
    if (paged && d.limited_by === 'kv_capacity') {
      return { state: 'no', title: 'Does not fit', text: `vLLM's KV cache holds ${count(kv.capacity_tokens)} tokens: ${plural(kv.concurrent_sequences, 'sequence')} of this length at once, fewer than the ${count(d.workload.micro_batch)} asked.` };
    }
    if (spare >= 0 && d.offload && (!d.offload.fits_host_ram || !d.offload.fits_nvme)) {
      const over = [];
      if (!d.offload.fits_host_ram) over.push(`host RAM (${size(Math.max(d.offload.host_bytes_per_node, d.offload.load_host_bytes_per_node), unit)} per node, ${size(d.cluster.host_ram_bytes, unit)} stated)`);
      if (!d.offload.fits_nvme) over.push(`NVMe (${size(d.offload.nvme_bytes_per_node, unit)} per node, ${size(d.cluster.nvme_bytes, unit)} stated)`);
      return { state: 'no', title: 'Does not fit', text: `The GPU holds ${per}, but the ${over.join(' and ')} exceeds the budget.` };
    }
    return { state: 'no', title: 'Does not fit', text: `${size(used, unit)} needed per GPU, ${size(memory, unit)} available: ${size(-spare, unit)} short.` };
  }
  if (d.verdict === 'tight') {
    return { state: 'tight', title: 'Tight', text: paged ? `vLLM's KV cache holds ${count(kv.capacity_tokens)} tokens: the request leaves less than the ${percent(headroom / memory)} headroom of it.`
      : `${per}: only ${size(spare, unit)} (${percent(spare / memory)}) to spare, less than the ${percent(headroom / memory)} headroom the estimate's error calls for. It may run, or run out of memory.` };
  }
  const needs = uncheckedNeeds(d, unit);
  if (needs.length) {
    return { state: 'unchecked', title: 'Fits on the GPUs, if the host has the memory', text: `${per}, but it needs ${needs.join(' and ')} per node, which is not checked: state the host's memory under Offload and host budgets.` };
  }
  if (paged) return { state: 'fits', title: 'Fits', text: serveText.trim() };
  return { state: 'fits', title: 'Fits', text: `${per}: ${size(spare, unit)} (${percent(spare / memory)}) to spare${headroom > 0 ? `, of which the plan keeps ${size(headroom, unit)} (${percent(headroom / memory)}) free` : ''}.` };
}

function planLine(view, unit) {
  const { main, candidate, detail } = view;
  const back = view.picked ? ' <button type="button" class="link" data-candidate="">Back to the plan\'s choice</button>' : '';
  if (view.serving) {
    const layout = candidate ? layoutName(candidate) : layoutName({ method: view.request.parallel?.method ?? 'single', gpus: view.request.cluster.gpus });
    const reason = view.planned && !view.picked ? ` ${escapeHtml(main.reason)}` : view.picked ? ' A layout you picked.' : '';
    return `<p class="choice" data-testid="choice"><strong>${escapeHtml(layout)}</strong>.${reason}${back}</p>`;
  }
  if (view.planned && !main.choice && !view.picked) {
    return `<p class="choice nofit" data-testid="choice">${escapeHtml(main.reason)}</p>`;
  }
  const name = candidate ? candidate.label : methodName(view.request.parallel.method);
  const mb = detail?.workload?.micro_batch ?? candidate?.max_micro_batch;
  const group = candidate ? (candidate.tp > 1 ? candidate.tp : 1) * (candidate.cp > 1 ? candidate.cp : 1) : 1;
  const per = group > 1 ? `per group of ${group} GPUs` : 'per GPU';
  const speed = candidate?.tokens_per_s ?? detail?.step_time?.tokens_per_s;
  const speedText = speed && (candidate ? candidate.fits : detail?.fits) ? `, about ${count(speed)} tokens/s` : '';
  const solved = detail?.solution ? ` (the largest that fits${detail.solution.max_batch === 0 ? ': none does' : ''})` : '';
  const reason = view.picked ? ' <span class="why">A candidate you picked.</span>' : view.planned ? ` <span class="why">${escapeHtml(whyChosen(view))}</span>` : '';
  return `<p class="choice" data-testid="choice"><strong>${escapeHtml(name)}</strong>, micro-batch ${count(mb)} ${per}${solved}${speedText}.${reason}${back}</p>`;
}

// Why the plan chose its candidate, without repeating the line above: how it ranks among the
// candidates that fit (the core's reason when the choice is an offload, which names its budgets).
function whyChosen(view) {
  const { main, candidate } = view;
  if (candidate?.offload) return 'Nothing fits on the GPUs alone: the fastest offload that fits.';
  const fitting = main.candidates.filter((c) => c.valid !== false && c.fits && c !== candidate);
  if (!fitting.length) return 'The only method that fits.';
  const next = fitting.reduce((a, b) => (b.tokens_per_s > a.tokens_per_s ? b : a));
  // Within 10 %: closer than the step-time model can tell apart (the core's plan_speed_tie).
  const close = next.tokens_per_s * 1.10 >= candidate.tokens_per_s;
  return close
    ? `Within 10 % of ${next.label}, closer than the speed model can tell apart: the simpler layout, or more sequences per GPU.`
    : `The fastest of ${fitting.length + 1} methods that fit; next: ${next.label} at ${count(next.tokens_per_s)} tokens/s.`;
}

// What it would take: the plan's changes to the run (precision, optimizer, LoRA/QLoRA, length,
// GPUs) that would fit or run faster, each in the core's sentence.
function alternativesHtml(view) {
  const list = view.planned && !view.picked ? view.main.alternatives ?? [] : [];
  if (!list.length) return '';
  const items = list.slice(0, 3).map((a) => `<li>${escapeHtml(a.sentence)}</li>`).join('');
  return `<div class="alternatives" data-testid="alternatives"><p>What it would take:</p><ul>${items}</ul></div>`;
}

// The plan's time over the tokens to train (the core's sentence for its choice), its cost at the
// GPU's price; with a price alone, the cost of a million tokens.
function costLine(view) {
  const speed = view.candidate?.tokens_per_s ?? view.detail?.step_time?.tokens_per_s;
  const price = view.price;
  const timed = view.planned && !view.picked && !view.serving ? view.main.time_and_cost : null;
  if (timed) {
    const cost = price ? `, about ${money(timed.gpu_hours * price)} at ${money(price)} per GPU-hour` : '';
    return `<p class="cost" data-testid="cost">${escapeHtml(timed.sentence.replace(/\.$/, ''))}${cost}.</p>`;
  }
  if (!price || !speed || view.serving || view.detail?.verdict === 'does_not_fit') return '';
  const gpus = view.request.cluster.gpus;
  const perMillion = (price * gpus) / (speed * 3600) * 1e6;
  return `<p class="cost" data-testid="cost">At ${money(price)} per GPU-hour: about ${money(perMillion)} per million training tokens (${plural(gpus, 'GPU')}).</p>`;
}

// Serving's capacity, in every layout: the KV cache's room in tokens and sequences at the
// request's length, the longest context at its batch and the most sequences at its length.
function servingFigures(view, unit) {
  const d = view.detail;
  if (!view.serving || !d) return '';
  const kv = d.kv_cache;
  const length = d.workload.seq_len + d.workload.new_tokens;
  const s = view.solves ?? {};
  const items = [];
  if (kv?.capacity_tokens !== undefined) {
    items.push(`<li>KV cache: room for <strong>${count(kv.capacity_tokens)} tokens</strong> (${size(kv.bytes, unit)}): ${plural(kv.concurrent_sequences, 'sequence')} of ${count(length)} tokens at once</li>`);
  } else if (kv && s.max_batch) {
    const most = s.max_batch.solution.max_batch;
    items.push(`<li>KV cache: room for <strong>${count(most * length)} tokens</strong>: ${plural(most, 'sequence')} of ${count(length)} tokens at once${most ? ` (${count(kv.bytes_per_token)} bytes per token and sequence)` : ''}</li>`);
  }
  const v = d.speed;
  if (v) {
    items.push(`<li>Speed: about <strong>${count(v.per_sequence_tokens_per_s)} tokens/s per sequence</strong> (${count(v.decode_tokens_per_s)} in all) after a ${count(v.prefill_s * 1000)} ms prefill${v.launch_bound ? ', bound by kernel launches' : ''}</li>`);
  }
  if (s.max_context) {
    const v = s.max_context.solution;
    items.push(`<li>Longest context at ${plural(d.workload.micro_batch, 'sequence')}: <strong>${v.max_context ? `${count(v.max_context)} tokens` : 'none fits'}</strong>${v.max_context ? ` (the prompt and ${count(d.workload.new_tokens)} new; limited by ${escapeHtml(v.limited_by)})` : ''}</li>`);
  }
  if (s.max_batch) {
    const v = s.max_batch.solution;
    items.push(`<li>Most sequences of ${count(length)} tokens at once: <strong>${v.max_batch ? count(v.max_batch) : 'none fits'}</strong>${v.max_batch ? ` (limited by ${escapeHtml(v.limited_by)})` : ''}</li>`);
  }
  return items.length ? `<ul class="serving" data-testid="serving">${items.join('')}</ul>` : '';
}

// The solved figure as the headline, when the user asks for it (serving's "Solve for").
function solvedHeadline(view) {
  const v = view.serving && view.state.solve ? view.solves?.[view.state.solve]?.solution : null;
  if (!v) return '';
  const none = v.max_context === 0 || v.max_batch === 0;
  const value = v.max_context !== undefined ? `${count(v.max_context)} tokens per sequence` : `${plural(v.max_batch, 'sequence')} at once`;
  return `<p class="solved" data-testid="solved">${none ? 'Nothing fits.' : `Up to <strong>${value}</strong> (limited by ${escapeHtml(v.limited_by)}).`}</p>`;
}

// What is being estimated, in one line: the model, the task and the GPUs to rent.
function titleHtml(view) {
  const m = view.model;
  const s = view.state;
  const c = view.detail?.cluster ?? view.main.cluster;
  const gpus = view.serving && view.candidate ? view.candidate.gpus : c.gpus;
  const weights = view.serving ? CHOICES.weights[view.detail?.workload?.weights ?? view.main.workload?.weights] : null;
  const task = view.serving ? `served${weights ? ` in ${weights}` : ''}` : view.llmem ? 'fine-tuned (LLMem)' : `${(CHOICES.ft[s.ft] ?? s.ft).replace('Full fine-tuning', 'full fine-tuning')}`;
  return `<p class="answer-title" data-testid="title"><strong>${escapeHtml(m.id ?? m.name ?? 'config.json')}</strong>, ${escapeHtml(task)}, on <strong>${gpus} × ${escapeHtml(c.gpu.name)}</strong>`
    + ` <small>${billions(m.total_params)} parameters · ${escapeHtml(size(c.gpu.memory_bytes, view.state.unit))} each</small></p>`;
}

export function answerHtml(view, unit, width = 640) {
  const d = view.detail;
  const v = verdictOf(view, unit);
  const title = titleHtml(view);
  const verdict = `<div class="verdict ${v.state}" data-testid="verdict" data-verdict="${v.state}" data-fits="${v.state === 'fits'}"`
    + ` data-peak-bytes="${d ? d.peak_bytes : 0}"><p><strong>${escapeHtml(v.title)}.</strong> ${escapeHtml(v.text)}</p></div>`;
  const chart = d?.per_gpu ? chartHtml(d.per_gpu, d.cluster, unit, width) : '';
  const host = d?.offload ? hostChartHtml(d.offload, { host: d.cluster.host_ram_bytes ?? 0, nvme: d.cluster.nvme_bytes ?? 0 }, unit, width) : '';
  const phase = d?.peak_phase ? `<p class="phase">The peak falls in the ${escapeHtml(phaseName(d.peak_phase))}.</p>` : '';
  return `${title}${verdict}${solvedHeadline(view)}${planLine(view, unit)}${costLine(view)}${alternativesHtml(view)}${servingFigures(view, unit)}${chart}${phase}${host}`;
}

function candidatesHtml(view, unit) {
  if (!view.planned) return '';
  const rows = view.main.candidates.map((c, i) => {
    const verdict = c.valid === false ? 'Not possible' : { fits: 'Fits', tight: 'Tight', does_not_fit: 'No' }[c.verdict] ?? 'No';
    const selected = i === view.shown;
    const button = `<button type="button" data-candidate="${i}" aria-pressed="${selected}">${escapeHtml(view.serving ? layoutName(c) : c.label)}</button>`;
    const peak = c.valid === false ? '–' : size(c.peak_bytes, unit);
    if (view.serving) {
      const limit = c.valid === false ? escapeHtml(c.note ?? '') : c.fits ? '–' : escapeHtml(LIMITS[c.limited_by] ?? c.limited_by ?? '');
      return `<tr class="${selected ? 'selected' : ''}"><td>${button}</td><td class="num">${c.gpus}</td><td>${verdict}</td><td class="num">${peak}</td><td>${limit}</td></tr>`;
    }
    const fits = c.valid !== false && c.fits;
    return `<tr class="${selected ? 'selected' : ''}"><td>${button}</td><td>${verdict}</td><td class="num">${fits ? count(c.max_micro_batch) : '–'}</td>`
      + `<td class="num">${peak}</td><td class="num">${fits ? count(c.tokens_per_s) : '–'}</td></tr>`;
  }).join('');
  const head = view.serving
    ? '<tr><th>Layout</th><th class="num">GPUs</th><th>Fits</th><th class="num">Peak per GPU</th><th>Limited by</th></tr>'
    : '<tr><th>Method</th><th>Fits</th><th class="num">Micro-batch</th><th class="num">Peak per GPU</th><th class="num">Tokens/s</th></tr>';
  const refused = (view.main.not_offered ?? []).map((line) => `<li>${escapeHtml(line)}</li>`).join('');
  const note = view.serving ? '' : '<p class="hint">A row that does not fit shows its peak at the first micro-batch tried; speeds are shown only for rows that fit.</p>'
    + (refused ? `<ul class="hint" data-testid="not-offered">${refused}</ul>` : '');
  return `<section class="candidates-section"><h2>Every candidate</h2><p class="hint">Select one to see its memory; any other change returns to the plan's choice.</p>
    <table class="candidates" data-testid="candidates"><thead>${head}</thead><tbody>${rows}</tbody></table>${note}</section>`;
}

function componentsHtml(view, unit) {
  const d = view.detail;
  if (!d?.per_gpu) return '';
  const ranks = d.per_gpu;
  const ids = [...new Set(ranks.flatMap((r) => Object.keys(r.components)))];
  const head = `<tr><th>Component</th>${ranks.map((r) => `<th class="num">${escapeHtml(rankLabel(r))}</th>`).join('')}<th>What it is</th></tr>`;
  const body = ids.map((id) => {
    const info = componentInfo(id);
    const cells = ranks.map((r) => `<td class="num">${r.components[id] === undefined ? '–' : size(r.components[id], unit)}</td>`).join('');
    return `<tr><td><a href="${info.link}" target="_blank" rel="noopener">${escapeHtml(info.name)}</a></td>${cells}`
      + `<td class="explain">${escapeHtml(info.text)}${info.source ? ` <span class="source">Source: ${prose(info.source)}.</span>` : ''}</td></tr>`;
  }).join('');
  const total = `<tr class="total"><td>Peak</td>${ranks.map((r) => `<td class="num">${size(r.peak_bytes, unit)}</td>`).join('')}<td></td></tr>`;
  const metric = CHOICES.metric[d.metric] ?? d.metric;
  return `<section><h2>What the peak holds</h2><p class="hint">As ${escapeHtml(metric)}; each name links to how gpumem computes it.</p>
    <table data-testid="components"><thead>${head}</thead><tbody>${body}${total}</tbody></table></section>`;
}

function timelineSection(view, unit, width) {
  const t = view.detail?.timeline;
  if (!t) {
    const why = view.llmem ? 'LLMem\'s estimator is a formula, not a replay: it has no timeline.'
      : view.serving && view.detail ? 'vLLM and llama.cpp reserve fixed buffers: their memory does not change over a request.' : '';
    return why ? `<section><h2>Memory over the step</h2><p class="hint">${why}</p></section>` : '';
  }
  return `<section><h2>Memory over the step</h2>${timelineHtml(t, view.detail.cluster, unit, width)}</section>`;
}

function notesHtml(view) {
  const lines = [...view.warnings];
  const notes = view.detail?.notes ?? view.main?.notes;
  if (Array.isArray(notes)) lines.push(...notes);
  else if (notes) lines.push(...Object.entries(notes).map(([id, text]) => `${componentName(id)}: ${typeof text === 'string' ? text : JSON.stringify(text)}`));
  if (!lines.length) return '';
  return `<section><h2>Notes</h2><ul class="notes">${lines.map((n) => `<li>${prose(n)}</li>`).join('')}</ul></section>`;
}

export function detailsHtml(view, unit, width = 640) {
  return `${candidatesHtml(view, unit)}${timelineSection(view, unit, width)}${componentsHtml(view, unit)}${notesHtml(view)}`;
}
