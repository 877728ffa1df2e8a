// The page (index.html) and the iframe embed (embed.html): the calculator with its state in the
// URL query (written with history.replaceState, restored on load and on back/forward), the copy
// buttons, and the service worker that keeps the site usable offline. The core runs in a Web
// Worker (core.js); from file://, where browsers refuse workers of local files, on the page.
import { mountCalculator } from './calculator.mjs';
import { compileWasm, inThreadClient, workerClient } from './core_client.mjs';
import { cliFor, queryFromState, stateFromQuery } from './state.mjs';
import { copyText } from './clipboard.mjs';

const byId = (id) => document.getElementById(id);

// Offline: a service worker pre-caches the site; a new version waits until the user reloads.
function registerServiceWorker() {
  if (!('serviceWorker' in navigator) || location.protocol === 'file:') return;
  navigator.serviceWorker.register('sw.js').then((registration) => {
    const offer = (worker) => {
      const banner = byId('update');
      if (!navigator.serviceWorker.controller || !banner) return;  // first install: no update
      banner.hidden = false;
      byId('update-reload').onclick = () => worker.postMessage('skip-waiting');
    };
    if (registration.waiting) offer(registration.waiting);
    registration.addEventListener('updatefound', () => {
      const worker = registration.installing;
      worker?.addEventListener('statechange', () => { if (worker.state === 'installed') offer(worker); });
    });
    let reloading = false;
    navigator.serviceWorker.addEventListener('controllerchange', () => {
      if (reloading || byId('update')?.hidden !== false) return;  // only an accepted update
      reloading = true;
      location.reload();
    });
  }).catch(() => {});
}

// file:// cannot fetch the .wasm: wasm-inline.js carries it as base64 (scripts/assemble_dist.mjs).
function inlineWasm() {
  const base64 = globalThis.GPUMEM_WASM_BASE64;
  return base64 ? Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)) : undefined;
}

export function coreClient() {
  if (location.protocol === 'file:') return inThreadClient(globalThis.gpumemCoreServer(inlineWasm()));
  const early = globalThis.gpumemCoreStart;  // web/start.js
  if (early) return workerClient(early.worker, early.wasm);
  return workerClient('core.js', compileWasm('gpumem_estimator.wasm'));
}

// `client`: the core, started by boot.mjs before the page is parsed.
export async function startPage({ compact = false, client = coreClient() } = {}) {
  const main = document.querySelector('main');
  try {
    const calculator = mountCalculator(byId('calculator'), {
      client,
      state: stateFromQuery(location.search),
      compact,
      fullLink: compact ? (state) => `index.html${queryFromState(state)}` : null,
      onChange: (next) => {
        if (!compact) history.replaceState(null, '', queryFromState(next) + location.hash);
      },
    });
    window.addEventListener('popstate', () => calculator.set(stateFromQuery(location.search)));
    for (const [id, text] of [
      ['copy-link', () => location.href],
      ['copy-json', () => JSON.stringify(calculator.request(), null, 2)],
      ['copy-cli', () => cliFor(calculator.request())],
    ]) {
      byId(id)?.addEventListener('click', (event) => copyText(text(), event.currentTarget));
    }
    // After the first answer, so that pre-caching the site does not compete with it.
    if (!compact) calculator.started.then(registerServiceWorker);
  } catch (error) {
    main.insertAdjacentHTML('beforeend', '<p class="error" role="alert"></p>');
    main.lastElementChild.textContent = `gpumem could not start: ${error.message}`;
  }
}
