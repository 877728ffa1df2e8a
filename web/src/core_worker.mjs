// The core behind the calculator (bundled with the facade into core.js): answers batches of API
// requests. In a Web Worker it listens for messages — the first brings the WebAssembly.Module the
// page compiled while the worker started (or null: the worker fetches the .wasm itself); on a page
// (file://, where browsers refuse workers of local files) it defines gpumemCoreServer for the page.

// `loadGpumem`: the facade's loader. A server turns requests into envelopes, never throwing for
// a request the core refuses.
export function serveCore(loadGpumem) {
  const server = (options) => {
    const ready = loadGpumem(options);
    return async (requests) => {
      const gpumem = await ready;
      return requests.map((request) => gpumem.respond(request));
    };
  };
  // The .wasm beside core.js.
  const locateFile = (path, directory) => directory + path;
  if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope) {
    let serve = null;
    self.addEventListener('message', async ({ data }) => {
      if ('module' in data) {
        serve = server(data.module ? { wasmModule: data.module } : { locateFile });
        return;
      }
      try {
        serve ??= server({ locateFile });
        self.postMessage({ id: data.id, responses: await serve(data.requests) });
      } catch (error) {
        self.postMessage({ id: data.id, failure: String(error?.message ?? error) });
      }
    });
  } else {
    globalThis.gpumemCoreServer = (wasmBinary) => server({ wasmBinary, locateFile });
  }
}
