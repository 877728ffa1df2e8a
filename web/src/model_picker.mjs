// The model field: a searchable list of the presets (ARIA combobox). Typing filters the list
// without changing the model; only a pick changes it, so the field and the answer never name
// different models. Every word typed must appear in the preset's id, family, type or size
// ("llama 70", "qwen3 moe", "8b instruct").
import { billions, escapeHtml } from './format.mjs';
import { isHubId } from './hub.mjs';

const MAX_SHOWN = 80;

function haystack(m) {
  return `${m.id} ${m.family} ${m.model_type} ${billions(m.total_params).replace(' ', '')}`.toLowerCase();
}

// Every preset, and each of its aliases (Instruct and chat variants of the same architecture) as
// a row of its own, so that "8b instruct" finds meta-llama/Llama-3.1-8B-Instruct.
export function withAliases(list) {
  return list.flatMap((m) => [m, ...(m.aliases ?? []).map((id) => ({ ...m, id, aliases: [], alias_of: m.id }))]);
}

export function matches(models, query) {
  const words = query.toLowerCase().split(/[\s,/]+/).filter(Boolean);
  return models.filter((m) => words.every((w) => haystack(m).includes(w)));
}

export function modelPicker(root, { onPick, onHub = () => {} }) {
  const input = root.querySelector('#gm-model');
  const list = root.querySelector('#gm-model-list');
  let models = [];
  let shown = [];
  let active = -1;
  let current = '';  // what the field shows when not searching

  const close = () => {
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    input.removeAttribute('aria-activedescendant');
    active = -1;
  };
  const restore = () => {
    input.value = current;
    close();
  };
  const highlight = (i) => {
    active = i;
    for (const [j, li] of [...list.children].entries()) li.setAttribute('aria-selected', String(j === i));
    const li = list.children[i];
    if (li?.id) {
      input.setAttribute('aria-activedescendant', li.id);
      li.scrollIntoView({ block: 'nearest' });
    }
  };
  const open = () => {
    const query = input.value === current ? '' : input.value;
    shown = matches(models, query).sort((a, b) => a.family.localeCompare(b.family) || a.total_params - b.total_params);
    const items = shown.slice(0, MAX_SHOWN).map((m, i) => `<li role="option" id="gm-model-option-${i}" data-id="${escapeHtml(m.id)}" aria-selected="false">`
      + `<span>${escapeHtml(m.id)}</span> <small>${escapeHtml(billions(m.total_params))} · ${escapeHtml(m.family)}</small></li>`);
    if (!models.length) items.push('<li class="empty">Loading the presets…</li>');
    else if (!shown.length) items.push('<li class="empty">No preset matches: paste its config.json below.</li>');
    // An id that is not a preset: its config.json from the Hub, on request.
    const typed = query.trim();
    if (isHubId(typed) && !shown.some((m) => m.id.toLowerCase() === typed.toLowerCase())) {
      items.push(`<li role="option" class="hub" id="gm-model-option-hub" data-hub="${escapeHtml(typed)}" aria-selected="false">`
        + `<span>Fetch ${escapeHtml(typed)}'s config.json from the Hub</span> <small>one request to huggingface.co, for that file only</small></li>`);
    }
    else if (shown.length > MAX_SHOWN) items.push(`<li class="empty">${shown.length - MAX_SHOWN} more: type more of the name</li>`);
    list.innerHTML = items.join('');
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    active = -1;
  };
  const pick = (id) => {
    current = id;
    restore();
    onPick(id);
  };

  input.addEventListener('input', open);
  input.addEventListener('focus', () => input.select());
  input.addEventListener('click', open);
  const focused = () => input.getRootNode().activeElement === input;
  input.addEventListener('blur', () => setTimeout(() => { if (!focused()) restore(); }, 150));
  input.addEventListener('keydown', (event) => {
    const count = Math.min(shown.length, MAX_SHOWN);
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      if (list.hidden) open();
      event.preventDefault();
      const step = event.key === 'ArrowDown' ? 1 : -1;
      if (count) highlight((active + step + count) % count);
    } else if (event.key === 'Enter') {
      event.preventDefault();
      const typed = input.value.trim();
      if (!list.hidden && !shown.length && isHubId(typed)) {
        restore();
        onHub(typed);
        return;
      }
      const choice = shown[active >= 0 ? active : 0];
      if (!list.hidden && choice && (active >= 0 || count === 1 || choice.id.toLowerCase() === input.value.trim().toLowerCase())) {
        pick(choice.id);
      }
    } else if (event.key === 'Escape') {
      restore();
    }
  });
  list.addEventListener('mousedown', (event) => event.preventDefault());  // keep the focus
  list.addEventListener('click', (event) => {
    const hub = event.target.closest('[data-hub]');
    if (hub) {
      const id = hub.dataset.hub;
      restore();
      onHub(id);
      return;
    }
    const li = event.target.closest('[data-id]');
    if (li) pick(li.dataset.id);
  });

  return {
    setModels(list_) {
      models = withAliases(list_);
      if (!list.hidden) open();
    },
    // The model the field shows when not searching: a preset id or the pasted config's name.
    show(text) {
      current = text;
      if (!focused() || list.hidden) input.value = text;
    },
  };
}
