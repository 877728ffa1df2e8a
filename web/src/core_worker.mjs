// The core behind the calculator (bundled with the facade into core.js): answers batches of API
// requests. In a Web Worker it listens for messages — the first brings the WebAssembly.Module the
// page compiled while the worker started (or null: the worker fetches the .wasm itself); on a page
// (file://, where browsers refuse workers of local files) it defines gpumemCoreServer for the page.

// `loadGpumem`: the facade's loader. A server turns requests into envelopes, never throwing for
// a request the core refuses.
export function serveCore(loadGpumem) {
  // `options.core`: 'estimator' in a worker, whose first download is the estimator's build: the
  // commands it leaves out go to the full module, fetched the first time one is asked for.
  const server = (options) => {
    const ready = loadGpumem(options);
    let full = options.core === 'estimator' ? null : ready;
    return async (requests) => {
      const estimator = await ready;
      const answers = [];
      for (const request of requests) {
        // The estimator's download embeds one model preset: the picker's list and the other
        // presets wait for catalogue.json, read the first time one is asked for.
        const lean = options.core === 'estimator';
        if (lean && request.command === 'models') await estimator.loadCatalogue();
        let answer = estimator.respond(request);
        if (lean && answer.error?.code === 'model.unknown_preset' && await estimator.loadCatalogue()) {
          answer = estimator.respond(request);
        }
        // The estimator's build refuses what only the full module answers, saying so by its code.
        if (answer.ok === false && answer.error?.code === 'request.full_module') {
          full ??= loadGpumem({ locateFile: options.locateFile });
          answers.push((await full).respond(request));
        } else {
          answers.push(answer);
        }
      }
      return answers;
    };
  };
  // The .wasm beside core.js.
  const locateFile = (path, directory) => directory + path;
  if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope) {
    let serve = null;
    const estimator = { core: 'estimator', locateFile };
    self.addEventListener('message', async ({ data }) => {
      if ('module' in data) {
        serve = server(data.module ? { ...estimator, wasmModule: data.module } : estimator);
        return;
      }
      try {
        serve ??= server(estimator);
        self.postMessage({ id: data.id, responses: await serve(data.requests) });
      } catch (error) {
        self.postMessage({ id: data.id, failure: String(error?.message ?? error) });
      }
    });
  } else {
    // file://: the full module, from wasm-inline.js.
    globalThis.gpumemCoreServer = (wasmBinary) => server({ wasmBinary, locateFile });
  }
}
