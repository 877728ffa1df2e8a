// The page: picks a model (preset or pasted config.json), asks the gpumem facade, renders the
// answer. It computes nothing itself.
import { loadGpumem, GpumemError } from './gpumem.mjs';

const DEFAULT_MODEL = 'meta-llama/Llama-3.1-8B';
const $ = (id) => document.getElementById(id);
const count = (n) => n.toLocaleString('en-US');
const billions = (n) => `${(n / 1e9).toFixed(n >= 1e10 ? 1 : 2)} B`;

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function fillModels(select, models) {
  const families = new Map();
  for (const m of models) {
    if (!families.has(m.family)) families.set(m.family, []);
    families.get(m.family).push(m);
  }
  select.replaceChildren();
  for (const [family, members] of [...families].sort(([a], [b]) => a.localeCompare(b))) {
    const group = document.createElement('optgroup');
    group.label = family;
    for (const m of members.sort((a, b) => a.total_params - b.total_params)) {
      group.append(new Option(`${m.id} — ${billions(m.total_params)}`, m.id));
    }
    select.append(group);
  }
  select.disabled = false;
}

function render(result, warnings) {
  const m = result.model;
  const g = result.groups;
  const rows = [
    ['Token embedding', g.embedding.token], ['Position embedding', g.embedding.position],
    ['Attention', g.attention], ['MLP (dense)', g.mlp.dense], ['MoE router', g.mlp.router],
    ['MoE routed experts', g.mlp.routed_experts], ['MoE shared experts', g.mlp.shared_experts],
    ['Norms', g.norm], ['Projections', g.projection],
    [`LM head${m.tied_embeddings ? ' (tied to the embedding)' : ''}`, g.lm_head], ['Task head', g.task_head],
  ].filter(([name, n]) => n > 0 || name.startsWith('LM head'));
  const blocks = result.blocks.map((b) => `<tr><td>${b.first}–${b.last}</td><td>${escape(b.stack)}${b.moe ? ' (MoE)' : ''}</td>
      <td class="num">${count(b.attention)}</td><td class="num">${count(b.mlp)}</td><td class="num">${count(b.norm)}</td>
      <td class="num">${count(b.total)}</td></tr>`).join('');
  $('result').innerHTML = `
    <h2>${escape(m.id ?? m.name)} <small>${escape(m.architecture)}</small></h2>
    ${warnings.map((w) => `<p class="warning">${escape(w)}</p>`).join('')}
    <div class="totals">
      <div>Parameters<strong data-testid="total-params">${count(result.total_params)}</strong></div>
      <div>Active per token<strong data-testid="active-params">${count(result.active_params)}</strong></div>
      <div>Layers × hidden<strong>${m.num_layers} × ${m.hidden_size}</strong></div>
      <div>Heads (KV)<strong>${m.num_heads} (${m.num_kv_heads})</strong></div>
    </div>
    <table><caption class="visually-hidden">Parameters by module group</caption>
      <thead><tr><th>Group</th><th class="num">Parameters</th></tr></thead>
      <tbody>${rows.map(([name, n]) => `<tr><td>${escape(name)}</td><td class="num">${count(n)}</td></tr>`).join('')}</tbody>
    </table>
    <table><caption class="visually-hidden">Parameters per block</caption>
      <thead><tr><th>Blocks</th><th>Stack</th><th class="num">Attention</th><th class="num">MLP</th>
        <th class="num">Norms</th><th class="num">Per block</th></tr></thead>
      <tbody>${blocks}</tbody>
    </table>`;
}

async function main() {
  const gpumem = await loadGpumem();
  const select = $('model');
  const configBox = $('config');
  const configError = $('config-error');
  fillModels(select, gpumem.models());
  const fromUrl = new URLSearchParams(location.search).get('model');
  select.value = fromUrl && [...select.options].some((o) => o.value === fromUrl) ? fromUrl : DEFAULT_MODEL;

  const show = (model) => {
    const response = gpumem.request({ command: 'params', model });
    render(response.result, response.warnings);
    $('result').setAttribute('aria-busy', 'false');
  };
  const showPreset = () => {
    show(select.value);
    const url = new URL(location.href);
    if (select.value === DEFAULT_MODEL) url.searchParams.delete('model');
    else url.searchParams.set('model', select.value);
    history.replaceState(null, '', url);
  };
  let timer;
  configBox.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      configError.hidden = true;
      if (!configBox.value.trim()) return showPreset();
      try {
        let config;
        try {
          config = JSON.parse(configBox.value);
        } catch (syntax) {
          throw new GpumemError({ code: 'json.parse_error', field: '', message: `Not valid JSON: ${syntax.message}` });
        }
        show({ config, name: 'pasted config.json' });
      } catch (error) {
        if (!(error instanceof GpumemError)) throw error;
        configError.textContent = `${error.message} (${error.code})`;
        configError.hidden = false;
      }
    }, 150);
  });
  select.addEventListener('change', showPreset);
  showPreset();
}

main().catch((error) => {
  $('result').innerHTML = `<p class="error">gpumem could not start: ${escape(error.message)}</p>`;
});
