// The page's entry (bundled as the classic script calculator.js, so that a downloaded copy also
// runs from file://, where browsers refuse ES modules). It starts the core first — a Web Worker
// that fetches and compiles the .wasm while the page is still being parsed — then the calculator.
// From file:// the core cannot run in a worker (browsers refuse workers of local files) nor fetch
// its .wasm, so wasm-inline.js (the .wasm as base64) and core.js are loaded onto the page first.
import { coreClient, startPage } from './page.mjs';

function script(src) {
  return new Promise((done, fail) => {
    const el = document.createElement('script');
    el.src = src;
    el.onload = done;
    el.onerror = () => fail(new Error(`${src} did not load`));
    document.head.append(el);
  });
}

const parsed = new Promise((done) => {
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', done, { once: true });
  else done();
});
const client = location.protocol === 'file:'
  ? script('wasm-inline.js').then(() => script('core.js')).then(coreClient)
  : Promise.resolve(coreClient());
Promise.all([client, parsed]).then(([core]) => startPage({ compact: document.body.hasAttribute('data-compact'), client: core }));
