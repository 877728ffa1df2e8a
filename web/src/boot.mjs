// The page's entry (bundled as the classic script calculator.js, so that a downloaded copy also
// runs from file://, where browsers refuse ES modules): starts the calculator. From file:// the
// core cannot run in a worker (browsers refuse workers of local files) nor fetch its .wasm, so
// wasm-inline.js (the .wasm as base64) and core.js are loaded onto the page first.
import { startPage } from './page.mjs';

const start = () => startPage({ compact: document.body.hasAttribute('data-compact') });

function script(src) {
  return new Promise((done, fail) => {
    const el = document.createElement('script');
    el.src = src;
    el.onload = done;
    el.onerror = () => fail(new Error(`${src} did not load`));
    document.head.append(el);
  });
}

if (location.protocol === 'file:') {
  script('wasm-inline.js').then(() => script('core.js')).then(start);
} else {
  start();
}
