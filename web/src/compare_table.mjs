// "Which GPU?" once asked (compare.mjs loads this as the classic script compare.js on the first
// click): the same workload planned on every GPU preset at 1, 2, 4 and 8 GPUs per node (a serving
// plan finds the fewest GPUs itself), listed with the verdict, the spare memory, the micro-batch
// and tokens/s, so that the smallest and the cheapest setup that fits stand out. An optional $ per
// GPU-hour per GPU turns tokens/s into the cost of a million training tokens. It runs in the
// core's worker, a GPU at a time; a change to the workload clears it.
import { count, escapeHtml, money, percent, size } from './format.mjs';
import { isServing, pricesOf, requestFor } from './state.mjs';

const COUNTS = [1, 2, 4, 8];


function rowsFor(gpu, state, model) {
  const base = { ...state, gpu: gpu.id, mem: '', bw: '', nodes: '1', method: 'auto', cand: '' };
  const counts = isServing(state) ? [8] : COUNTS;
  return counts.map((n) => ({ gpu, n, request: requestFor({ ...base, gpus: String(n) }, model) }));
}

// One row's figures from its plan: the choice, or the nearest candidate when nothing fits.
function figures(row, response) {
  if (!response.ok) return { ...row, error: response.error.message, verdict: 'invalid' };
  const r = response.result;
  const c = r.choice ? r.candidates[r.choice.candidate] : null;
  const memory = r.cluster.gpu.memory_bytes;
  if (!c) return { ...row, verdict: 'does_not_fit', memory };
  const gpus = c.gpus ?? row.n;  // serving: the fewest that serve
  return {
    ...row, gpus, memory, verdict: c.verdict, spare: memory - c.peak_bytes, mb: c.max_micro_batch,
    speed: c.tokens_per_s, label: c.label ?? (c.gpus > 1 ? `${c.method === 'pipeline' ? 'layers split' : 'tensor parallel'}` : 'one GPU'),
  };
}

// The table in `section` (compare.mjs drew its heading and its button).
export function compareTable(section, { client, context, onUse, onPrice }) {
  let rows = [];
  let generation = 0;
  let progress = '';

  let showAll = false;
  const SHOWN = 12;

  const render = () => {
    const { state } = context();
    const unit = state.unit;
    const prices = pricesOf(state);
    const serving = isServing(state);
    const costOf = (r) => (prices[r.gpu.id] && r.speed && r.verdict === 'fits' && !serving
      ? (prices[r.gpu.id] * r.gpus) / (r.speed * 3600) * 1e6 : null);
    const fitting = rows.filter((r) => r.verdict === 'fits');
    const smallest = fitting.reduce((best, r) => (!best || r.gpus * r.memory < best.gpus * best.memory ? r : best), null);
    const cheapest = fitting.filter(costOf).reduce((best, r) => (!best || costOf(r) < costOf(best) ? r : best), null);
    // Fitting setups first, the cheapest per token first where prices are given, then the least
    // memory in all.
    const order = { fits: 0, tight: 1, does_not_fit: 2, invalid: 3 };
    const sorted = [...rows].sort((a, b) => order[a.verdict] - order[b.verdict]
      || (costOf(a) ?? Infinity) - (costOf(b) ?? Infinity) || a.gpus * a.memory - b.gpus * b.memory);
    const shown = showAll ? sorted : sorted.slice(0, SHOWN);
    const body = shown.map((r) => {
      const cost = costOf(r);
      const tags = [r === smallest ? 'smallest' : '', r === cheapest ? 'cheapest' : ''].filter(Boolean).join(', ');
      const fits = r.verdict === 'fits' || r.verdict === 'tight';
      return `<tr class="${tags ? 'best' : ''}"><td>${escapeHtml(r.gpu.name)}${tags ? ` <span class="tag">${tags}</span>` : ''}</td>`
        + `<td class="num">${r.gpus ?? r.n}</td><td>${{ fits: 'Fits', tight: 'Tight', does_not_fit: 'No', invalid: 'Error' }[r.verdict]}</td>`
        + `<td class="num">${fits ? `${size(r.spare, unit)} (${percent(r.spare / r.memory)})` : '–'}</td>`
        + (serving ? `<td>${fits ? escapeHtml(r.label) : '–'}</td>`
          : `<td class="num">${fits ? count(r.mb) : '–'}</td><td class="num">${fits ? count(r.speed) : '–'}</td>`)
        + `<td><input type="number" min="0" step="0.01" class="price" data-price="${escapeHtml(r.gpu.id)}" value="${prices[r.gpu.id] ?? ''}" aria-label="$ per GPU-hour for ${escapeHtml(r.gpu.name)}" placeholder="$/h"></td>`
        + (serving ? `<td class="num">${prices[r.gpu.id] && fits ? money(prices[r.gpu.id] * r.gpus) : '–'}</td>`
          : `<td class="num">${cost ? money(cost) : '–'}</td>`)
        + `<td>${fits ? `<button type="button" data-use="${escapeHtml(r.gpu.id)}" data-count="${r.gpus ?? r.n}">Use</button>` : ''}</td></tr>`;
    }).join('');
    const head = serving
      ? '<tr><th>GPU</th><th class="num">GPUs</th><th>Fits</th><th class="num">Spare per GPU</th><th>Layout</th><th>$ per GPU-hour</th><th class="num">$ per hour</th><th></th></tr>'
      : '<tr><th>GPU</th><th class="num">GPUs</th><th>Fits</th><th class="num">Spare per GPU</th><th class="num">Micro-batch</th><th class="num">Tokens/s</th><th>$ per GPU-hour</th><th class="num">$ per million tokens</th><th></th></tr>';
    const summary = smallest
      ? `<p data-testid="compare-summary">Smallest setup that fits: <strong>${smallest.gpus} × ${escapeHtml(smallest.gpu.name)}</strong>${cheapest ? `; cheapest per token: <strong>${cheapest.gpus} × ${escapeHtml(cheapest.gpu.name)}</strong> (${money(costOf(cheapest))} per million tokens)` : serving ? '' : '; give $ per GPU-hour to compare costs'}.</p>`
      : rows.length && !progress ? '<p data-testid="compare-summary">No GPU preset fits this workload with up to 8 GPUs per node.</p>' : '';
    const more = sorted.length > SHOWN
      ? `<button type="button" class="compare-more">${showAll ? `Show the first ${SHOWN}` : `Show all ${sorted.length} setups`}</button>` : '';
    section.querySelector('.compare-body').innerHTML = rows.length
      ? `${summary}<table data-testid="compare"><thead>${head}</thead><tbody>${body}</tbody></table>${more}` : '';
    section.querySelector('.compare-progress').textContent = progress;
  };

  const run = async () => {
    const mine = ++generation;
    const { state, model, gpus } = context();
    rows = [];
    const jobs = gpus.map((g) => rowsFor(g, state, model));
    for (const [i, job] of jobs.entries()) {
      progress = `Computing ${i + 1} of ${jobs.length} GPUs…`;
      render();
      const responses = await client.run(job.map((r) => r.request));
      if (mine !== generation) return;
      rows.push(...job.map((r, k) => figures(r, responses[k])));
    }
    progress = '';
    render();
  };

  section.addEventListener('click', (event) => {
    const use = event.target.closest('[data-use]');
    if (use) onUse(use.dataset.use, use.dataset.count);
    if (event.target.closest('.compare-more')) {
      showAll = !showAll;
      render();
    }
  });
  section.addEventListener('change', (event) => {
    const price = event.target.closest('[data-price]');
    if (!price) return;
    onPrice(price.dataset.price, price.value);
    render();
  });
  return {
    // The workload changed: the comparison no longer describes it.
    clear() {
      if (!rows.length && !progress) return;
      generation += 1;
      rows = [];
      progress = '';
      render();
    },
    run,
  };
}
