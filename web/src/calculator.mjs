// The calculator: the form over the state (state.mjs, form.mjs), the core's answers (through the
// worker client, core_client.mjs) turned into one view and rendered (answer.mjs), and "Which
// GPU?" (compare.mjs). Mounted by the page (index.html, embed.html) and by the custom element.
// It computes nothing itself. Every edit cancels the answer in flight and returns to the plan's
// choice; an answer the inputs no longer describe is marked out of date.
import { answerHtml, detailsHtml } from './answer.mjs';
import { compareSection } from './compare.mjs';
import { advancedHtml, clearFieldErrors, primaryHtml, showFieldError, syncForm } from './form.mjs';
import { escapeHtml, grouped, messageText } from './format.mjs';
import { FIELD_LABELS, FORM_UNITS, formFieldOf } from './labels.mjs';
import { modelPicker } from './model_picker.mjs';
import { MAX_CONFIG_CODE, decodeConfig, encodeConfig } from './share.mjs';
import { hubReader, launchReader, yaml } from './classic_scripts.mjs';
import { launchHtml, showLaunch } from './launch.mjs';
import {
  candidateRequest, isEncoderDecoder, isLlmem, isServing, pricesOf, requestFor, servingSolves, withPrice, withTimeline,
} from './state.mjs';

// An API error as the form says it: the field's label, and a range in the form's units.
export function friendlyError(error, state) {
  const key = formFieldOf(error.field ?? '');
  const label = key ? FIELD_LABELS[key] : null;
  let text = messageText(error.message ?? error);
  text = text.replace(/\[([a-z_.]+)\]/g, (whole, field) => {
    const k = formFieldOf(field);
    return k ? `“${FIELD_LABELS[k]}”` : whole;
  });
  // A pasted config's key, as config.json spells it.
  if (key === 'config' && /^model\.config\.\w/.test(error.field)) {
    return { key, text: `${label}, “${error.field.slice('model.config.'.length)}”: ${text}` };
  }
  if (error.range && label) {
    const u = FORM_UNITS[key];
    const per = u?.per ?? 1;
    const show = (v) => `${grouped(v / per, per === 1 ? 0 : 2)}${u ? ` ${u.unit}` : ''}`;
    const whole = per === 1 && /integer/.test(error.message) ? 'a whole number ' : '';
    const given = state[key] !== undefined && state[key] !== '' ? state[key] : 'nothing';
    return { key, text: `${label} must be ${whole}between ${show(error.range.min)} and ${show(error.range.max)}; got ${given}.` };
  }
  return { key, text: label ? `${label}: ${text}` : text };
}

const LAYOUT = (compact) => `
  <div class="calc${compact ? ' compact-mode' : ''}">
    ${primaryHtml()}
    <section class="answer" aria-live="polite" aria-busy="true" data-testid="result" aria-label="The answer">
      <p class="status" role="status" hidden></p>
      <div class="answer-body"><p>Loading the WebAssembly core…</p></div>
    </section>
    ${advancedHtml()}
  </div>
  <div class="details"></div>
  <section class="compare" data-testid="compare-section"${compact ? ' hidden' : ''}></section>`;

export function mountCalculator(root, { client, state, compact = false, onChange = () => {}, fullLink = null }) {
  root.innerHTML = LAYOUT(compact);
  const $ = (sel) => root.querySelector(sel);
  let pasted = null;       // {config, name} of a pasted config.json
  let gpus = [];           // the GPU presets
  let generation = 0;      // the latest computation; older answers are dropped
  let timer = null;
  let lastView = null;
  let firstDone = false;
  let listsLoaded = false;
  let ready = Promise.resolve();  // a link's config being decoded

  const model = () => pasted ?? state.model;
  const request = () => requestFor(state, model());
  const picker = modelPicker(root, {
    onPick: (id) => {
      pasted = null;
      state.cfg = '';
      $('#gm-config').value = '';
      edit('model', id, { hub: '' });
    },
    onHub: (id) => fetchFromHub(id),
  });

  // A model that is not a preset, on the user's request: its config.json from the Hub, read as
  // a pasted one under its id (remembered, and carried in the share link).
  async function fetchFromHub(id) {
    status(`Fetching ${escapeHtml(id)}'s config.json from huggingface.co…`, 'busy');
    try {
      const config = await (await hubReader()).hubConfig(id);
      const text = JSON.stringify(config, null, 2);
      $('#gm-config').value = text;
      await readPasted(text, id);
    } catch (error) {
      generation += 1;
      delete $('.answer').dataset.pending;
      showError({ field: 'model', message: error.message });
    }
  }
  const compare = compareSection($('.compare'), {
    client,
    context: () => ({ state, model: model(), gpus }),
    onUse: (gpu, count) => edit('gpu', gpu, { gpus: count, nodes: '1', mem: '', bw: '' }),
    onPrice: (gpu, price) => {
      setPrice(gpu, price);
      writeForm();
    },
  });

  // A GPU's $ per hour (the form's or the comparison's): the answer's cost lines, no new estimate.
  function setPrice(gpu, price) {
    state.prices = withPrice(state, gpu, price);
    onChange({ ...state });
    if (lastView) render({ ...lastView, price: pricesOf(state)[state.gpu] });
  }

  const status = (text, kind = '') => {
    const el = $('.status');
    el.hidden = !text;
    el.className = `status ${kind}`;
    el.innerHTML = text;
  };

  // (The GPU's price is kept in the prices of every GPU the page was told of.)
  const writeForm = () => {
    syncForm(root, { ...state, gprice: String(pricesOf(state)[state.gpu] ?? '') }, model());
    picker.show(pasted ? pasted.name : state.model);
    $('#gm-config-clear').hidden = !pasted;
  };

  // The whole answer for the state: the main request, then for a plan the shown candidate
  // replayed as an estimate (its verdict, chart and timeline), then for serving the two solves.
  async function buildView(req, mine, early) {
    const serving = isServing(state);
    const planned = req.command === 'plan';
    // A training plan answers first without what it would take (the changes are planned too,
    // which the first answer need not wait for: weighChanges adds them).
    const first = planned && !serving && !isLlmem(state) ? { ...req, options: { ...req.options, alternatives: false } } : req;
    const [main] = await client.run([planned ? first : withTimeline(req)]);
    if (!main.ok) throw main.error;
    const r = main.result;
    const view = {
      state: { ...state }, request: req, serving, planned, llmem: isLlmem(state), main: r, model: r.model,
      warnings: main.warnings ?? [], shown: -1, picked: false, candidate: null, detail: planned ? null : r,
      detailError: null, solves: null, price: pricesOf(state)[state.gpu],
    };
    let detailRequest = planned ? null : req;
    if (planned && r.candidates.length) {
      const wanted = state.cand === '' ? -1 : Number(state.cand);
      view.picked = wanted >= 0 && wanted < r.candidates.length;
      // Nothing fits: the valid candidate nearest to fitting.
      const nearest = r.candidates.reduce((best, c, i) => (c.valid !== false
        && (best < 0 || c.peak_bytes < r.candidates[best].peak_bytes) ? i : best), -1);
      view.shown = view.picked ? wanted : r.choice ? r.choice.candidate : Math.max(nearest, 0);
      view.candidate = r.candidates[view.shown];
      // A training candidate without offload carries its peak, verdict and components: shown at
      // once, the same numbers its replay gives (tests/core/api/answer_test.cpp), before the replay
      // adds the timeline and the notes.
      const c = view.candidate;
      if (!serving && c.valid !== false && !c.offload && c.per_gpu) {
        early({ ...view, detail: {
          cluster: r.cluster, metric: 'device_used', peak_bytes: c.peak_bytes, device_used_bytes: c.peak_bytes,
          verdict: c.verdict, fits: c.fits, per_gpu: c.per_gpu, workload: { micro_batch: Math.max(1, c.max_micro_batch) },
        } });
      }
      if (view.candidate.valid !== false) {
        detailRequest = candidateRequest(req, view.candidate, serving);
        const [d] = await client.run([detailRequest]);
        if (mine !== generation) return null;
        if (d.ok) view.detail = d.result;
        else view.detailError = friendlyError(d.error, state).text;
      }
    }
    view.detailRequest = detailRequest;
    if (serving && view.detail && detailRequest) {
      const answers = await client.run(servingSolves(detailRequest));
      view.solves = {};
      for (const a of answers) if (a.ok) view.solves[a.result.solution.max_context !== undefined ? 'max_context' : 'max_batch'] = a.result;
    }
    return view;
  }

  // What it would take: the training plan again with its changes planned, after the answer.
  async function weighChanges(view, req, mine) {
    if (!view.planned || view.serving || view.llmem) return;
    const [again] = await client.run([req]);
    if (mine !== generation || !again.ok) return;
    view.main = { ...view.main, alternatives: again.result.alternatives ?? [] };
    render(view);
  }

  // `early`: the plan's candidate shown before its replay arrives (the same numbers).
  function render(view, { early = false } = {}) {
    lastView = view;
    const unit = view.state.unit;
    // Charts are drawn at the size they are shown, so their text stays legible on a phone.
    const answerWidth = Math.round(Math.min(720, Math.max(300, $('.answer').clientWidth || 640)));
    const detailsWidth = Math.round(Math.min(900, Math.max(300, $('.details').clientWidth || 640)));
    $('.answer-body').innerHTML = answerHtml(view, unit, answerWidth)
      + (fullLink ? `<p class="open-full"><a href="${escapeHtml(fullLink(view.state))}" target="_blank" rel="noopener">Open in the full calculator</a></p>` : '');
    // (The early view shows the answer; what is below it follows with the replay.)
    if (!early) $('.details').innerHTML = compact ? '' : launchHtml(view) + detailsHtml(view, unit, detailsWidth);
    $('.answer-body').classList.remove('stale');
    $('.details').classList.remove('stale');
    if (!early) $('.answer').setAttribute('aria-busy', 'false');
    const unmatched = (view.detail ?? view.main).unmatched_targets ?? view.main.unmatched_targets ?? [];
    const warning = $('#gm-targets-warning');
    warning.hidden = !unmatched.length;
    warning.textContent = unmatched.length
      ? `${unmatched.map((t) => `“${t}”`).join(', ')} ${unmatched.length === 1 ? 'names' : 'name'} no module of this model: PEFT skips ${unmatched.length === 1 ? 'it' : 'them'}.` : '';
    status('');
    // Until the GPU list arrives, the GPU field names the answer's GPU.
    const gpu = (view.detail ?? view.main).cluster?.gpu;
    if (!gpus.length && gpu && $('#gm-gpu').options[0]) $('#gm-gpu').options[0].text = gpu.name;
    if (!firstDone) {
      firstDone = true;
      performance.mark('gpumem-first-result');
    }
    if (!early && !listsLoaded) loadLists();
  }

  function showError(error) {
    const { key, text } = friendlyError(error, state);
    if (key === 'config' && pasted) {
      $('#gm-config-error').textContent = text;
      $('#gm-config-error').hidden = false;
    } else if (key) {
      showFieldError(root, key, text);
    }
    $('.answer').setAttribute('aria-busy', 'false');
    if (!lastView) $('.answer-body').innerHTML = '';
    $('.answer-body').classList.add('stale');
    $('.details').classList.add('stale');
    status(`<span data-testid="error" class="error">${escapeHtml(text)}</span>${lastView ? ' <span class="stale-note">The answer below is out of date.</span>' : ''}`, 'problem');
    if (!listsLoaded) loadLists();
  }

  async function compute() {
    const mine = ++generation;
    await ready;
    if (mine !== generation) return;
    clearFieldErrors(root);
    $('#gm-config-error').hidden = true;
    const busy = setTimeout(() => { if (mine === generation) status('Computing…', 'busy'); }, 150);
    $('.answer').setAttribute('aria-busy', 'true');
    $('.answer').dataset.pending = 'true';  // until what it would take is weighed too
    try {
      const req = request();
      const view = await buildView(req, mine, (first) => { if (mine === generation) render(first, { early: true }); });
      if (view && mine === generation) render(view);
      // The answer is on screen: weighing the changes below it never says "Computing…" above it.
      clearTimeout(busy);
      if (view && mine === generation) await weighChanges(view, req, mine);
    } catch (error) {
      if (mine === generation) showError(error);
    } finally {
      clearTimeout(busy);
      // The answer on screen describes the inputs (tests and scripts wait for this).
      if (mine === generation) delete $('.answer').dataset.pending;
    }
  }

  const changed = ({ immediate = false, keepPick = false } = {}) => {
    if (!keepPick) state.cand = '';
    writeForm();
    onChange({ ...state });
    compare.clear();
    generation += 1;  // an answer in flight no longer describes the inputs
    $('.answer').dataset.pending = 'true';
    clearTimeout(timer);
    if (immediate) compute();
    else timer = setTimeout(compute, 150);
  };

  // A choice (a select, a radio, a pick) answers at once; typing waits for a pause.
  function edit(key, value, more = {}, immediate = true) {
    state[key] = value;
    Object.assign(state, more);
    changed({ immediate });
  }

  async function readPasted(textValue, hubId = '') {
    $('.answer').dataset.pending = 'true';
    state.hub = hubId;
    if (!textValue.trim()) {
      pasted = null;
      state.cfg = '';
      changed({ immediate: true });
      return;
    }
    let config;
    try {
      config = JSON.parse(textValue);
    } catch (syntax) {
      generation += 1;
      delete $('.answer').dataset.pending;
      showError({ field: 'model.config', message: `Not valid JSON: ${syntax.message}` });
      $('#gm-config-error').textContent = `Not valid JSON: ${syntax.message}`;
      $('#gm-config-error').hidden = false;
      return;
    }
    pasted = { config, name: hubId || 'pasted config.json' };
    const code = await encodeConfig(config).catch(() => '');
    const share = $('#gm-config-share');
    share.hidden = code.length <= MAX_CONFIG_CODE;
    share.textContent = share.hidden ? '' : `This config.json is too long to share in a link (${grouped(code.length / 1024, 1)} KB compressed; links hold up to ${MAX_CONFIG_CODE / 1000} KB): a copied link opens the preset instead.`;
    state.cfg = code.length <= MAX_CONFIG_CODE ? code : '';
    changed({ immediate: true });
  }

  root.addEventListener('input', (event) => {
    const el = event.target;
    if (el.id === 'gm-config') {
      readPasted(el.value);
      return;
    }
    const key = el.dataset?.key;
    if (!key || el.closest('.compare')) return;
    if (key === 'gprice') {
      setPrice(state.gpu, el.value);  // a price changes no estimate
      return;
    }
    edit(key, el.value, {}, el.tagName === 'SELECT' || el.type === 'radio');
  });
  root.addEventListener('change', (event) => {
    const el = event.target;
    if (el.id === 'gm-config-file' && el.files[0]) {
      el.files[0].text().then((t) => {
        $('#gm-config').value = t;
        readPasted(t);
      });
    }
  });
  root.addEventListener('click', (event) => {
    if (event.target.id === 'gm-config-clear') {
      $('#gm-config').value = '';
      readPasted('');
      return;
    }
    if (event.target.closest?.('[data-launch-read]')) {
      const [asked, text, out] = [request(), $('#gm-launch-paste').value, $('.launch-import-out')];
      launchReader()
        .then(({ readPasted }) => readPasted(client, asked, text, out, (next) => {
          adopt(next);
          changed({ immediate: true });
        }, yaml))
        .catch((error) => { out.textContent = messageText(error.message ?? error); });
      return;
    }
    const launch = event.target.closest?.('[data-launch]');
    if (launch && lastView) {
      showLaunch(client, lastView, launch.dataset.launch, $('.launch-files'));
      return;
    }
    const button = event.target.closest?.('[data-candidate]');
    if (!button) return;
    state.cand = button.dataset.candidate;
    changed({ immediate: true, keepPick: true });
  });

  // A link's pasted config: decoded before the first answer.
  function adopt(next) {
    Object.assign(state, next);
    pasted = null;
    if (state.cfg) {
      ready = decodeConfig(state.cfg).then((config) => { pasted = { config, name: state.hub || 'pasted config.json' }; }, () => {
        state.cfg = '';
        $('#gm-config-error').textContent = 'The link\'s config.json could not be read: it opens the preset instead.';
        $('#gm-config-error').hidden = false;
      }).then(() => {
        if (pasted) $('#gm-config').value = JSON.stringify(pasted.config, null, 2);
        writeForm();
      });
    }
  }

  // The GPU and model lists, after the first answer (which does not need them).
  async function loadLists() {
    listsLoaded = true;
    const [gpuList, models] = await client.run([{ command: 'gpus' }, { command: 'models' }]);
    gpus = gpuList.ok ? gpuList.result.gpus : [];
    $('#gm-gpu').replaceChildren(...gpus.map((g) => new Option(`${g.name} — ${grouped(g.memory_bytes / 2 ** 30, 0)} GiB`, g.id)));
    if (!gpus.some((g) => g.id === state.gpu)) $('#gm-gpu').append(new Option(state.gpu, state.gpu));
    writeForm();
    if (models.ok) picker.setModels(models.result.models);
  }

  const start = () => compute();

  adopt({ ...state });
  $('#gm-gpu').append(new Option('…', state.gpu));  // named by the first answer, listed after it
  writeForm();
  const started = start().catch((error) => status(`<span class="error" data-testid="error">gpumem could not start: ${escapeHtml(error.message)}</span>`, 'problem'));
  return {
    request,
    started,
    // The view on screen (for the page's copy buttons and tests).
    view: () => lastView,
    isT5: () => isEncoderDecoder(model()),
    set(next) {
      adopt(next);
      changed({ immediate: true, keepPick: true });
    },
  };
}
