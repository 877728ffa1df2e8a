// How the calculator reaches the core: a Web Worker running core.js, so that no replay ever
// blocks the page, or — where a worker cannot start (a page opened from file://, a host page on
// another origin) — the core on the page itself. Both answer a batch of API requests with the
// API's envelopes ({ok, result | error}), in order.

// `worker`: the Worker running core.js (or its URL); `wasm`: a promise of the compiled module,
// handed to the worker as its first message, so that compiling overlaps the worker's start
// (web/start.js starts both before the page's script loads).
export function workerClient(worker, wasm = Promise.resolve(null)) {
  if (typeof worker === 'string' || worker instanceof URL) worker = new Worker(worker);
  const sent = wasm.catch(() => null).then((module) => worker.postMessage({ module }));
  let next = 0;
  const waiting = new Map();
  const failAll = (message) => {
    for (const w of waiting.values()) w.reject(new Error(message));
    waiting.clear();
  };
  worker.addEventListener('message', ({ data }) => {
    const w = waiting.get(data.id);
    if (!w) return;
    waiting.delete(data.id);
    if (data.failure) w.reject(new Error(data.failure));
    else w.resolve(data.responses);
  });
  worker.addEventListener('error', (event) => failAll(event.message || 'the core could not start'));
  return {
    run(requests) {
      const id = ++next;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        sent.then(() => worker.postMessage({ id, requests }));
      });
    },
  };
}

// The core's module, compiled off the main thread while the page starts (a host serving .wasm
// without its MIME type gets the bytes compiled instead).
export async function compileWasm(url) {
  const response = fetch(url);
  try {
    return await WebAssembly.compileStreaming(response);
  } catch {
    return WebAssembly.compile(await (await fetch(url)).arrayBuffer());
  }
}

// `serve`: requests -> envelopes (core_worker.mjs's coreServer), on this thread.
export function inThreadClient(serve) {
  return { run: async (requests) => serve(requests) };
}
