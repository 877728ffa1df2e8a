// The calculator as a custom element class, for documentation pages and other hosts. Its
// attributes use the page's URL parameter names (model, gpu, gpus, phase, ft, mb, seq, …;
// web/src/state.mjs); `compact` shows only the answer (verdict, method and chart, within 600 px of
// height) with a link to the full calculator. This module only defines the class:
// gpumem-calculator.mjs registers it as <gpumem-calculator>, and a host that wants another name
// registers it itself:
//   import { GpumemCalculator } from './gpumem-calculator-element.mjs';
//   customElements.define('memory-planner', GpumemCalculator);
import { loadGpumem } from './gpumem.mjs';
import { mountCalculator } from './src/calculator.mjs';
import { inThreadClient, workerClient } from './src/core_client.mjs';
import { FIELDS, queryFromState, stateFrom } from './src/state.mjs';

let client;  // one core for every element on the page

// A worker from this module's own site; a host page on another origin may not start one, and then
// the core runs on the page.
function coreClient() {
  const here = new URL('./', import.meta.url);
  if (here.origin === location.origin) {
    try {
      return workerClient(new URL('./core.js', here));
    } catch {
      // fall through to the page's thread
    }
  }
  const core = loadGpumem();
  return inThreadClient(async (requests) => {
    const gpumem = await core;
    return requests.map((r) => gpumem.respond(r));
  });
}

export class GpumemCalculator extends HTMLElement {
  static get observedAttributes() {
    return Object.keys(FIELDS);
  }

  connectedCallback() {
    if (this.shadowRoot) return;
    const shadow = this.attachShadow({ mode: 'open' });
    const style = document.createElement('link');
    style.rel = 'stylesheet';
    style.href = new URL('./style.css', import.meta.url).href;
    const container = document.createElement('div');
    container.className = 'gpumem';
    shadow.append(style, container);
    client ??= coreClient();
    const full = new URL('./index.html', import.meta.url).href;
    this.calculator = mountCalculator(container, {
      client,
      state: stateFrom((name) => this.getAttribute(name)),
      compact: this.hasAttribute('compact'),
      fullLink: this.hasAttribute('compact') ? (state) => `${full}${queryFromState(state)}` : null,
      onChange: (state) => this.dispatchEvent(new CustomEvent('gpumem-change', { detail: state })),
    });
  }

  attributeChangedCallback() {
    this.calculator?.set(stateFrom((name) => this.getAttribute(name)));
  }
}
