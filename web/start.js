// Starts the core before anything else on the page: the Web Worker that runs it and the
// compilation of its .wasm, which calculator.js (web/src/page.mjs) then takes over. A classic
// script of its own, loaded first, so that neither waits for the page's larger script.
(() => {
  if (location.protocol === 'file:' || typeof Worker === 'undefined') return;
  // The estimator's build of the core (params, estimate, plan): the worker fetches the full one
  // when a launch file or a validation is asked for (web/src/core_worker.mjs).
  const fetched = fetch('gpumem_estimator.wasm');
  const wasm = WebAssembly.compileStreaming(fetched)
    .catch(() => fetch('gpumem_estimator.wasm').then((r) => r.arrayBuffer()).then((bytes) => WebAssembly.compile(bytes)));
  globalThis.gpumemCoreStart = { worker: new Worker('core.js'), wasm };
})();
