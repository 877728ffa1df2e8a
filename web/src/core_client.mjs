// How the calculator reaches the core: a Web Worker running core.js, so that no replay ever
// blocks the page, or — where a worker cannot start (a page opened from file://, a host page on
// another origin) — the core on the page itself. Both answer a batch of API requests with the
// API's envelopes ({ok, result | error}), in order.

export function workerClient(url) {
  const worker = new Worker(url);
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
        worker.postMessage({ id, requests });
      });
    },
  };
}

// `serve`: requests -> envelopes (core_worker.mjs's coreServer), on this thread.
export function inThreadClient(serve) {
  return { run: async (requests) => serve(requests) };
}
