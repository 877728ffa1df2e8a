// The calculator as a custom element class, for documentation pages and other hosts. Its
// attributes use the page's URL parameter names (model, gpu, gpus, phase, ft, mb, seq, …;
// web/src/state.mjs); `compact` hides the form's less common fields. This module only defines
// the class: gpumem-calculator.mjs registers it as <gpumem-calculator>, and a host that wants
// another name registers it itself:
//   import { GpumemCalculator } from './gpumem-calculator-element.mjs';
//   customElements.define('memory-planner', GpumemCalculator);
import { loadGpumem } from './gpumem.mjs';
import { mountCalculator } from './src/calculator.mjs';
import { FIELDS, stateFrom } from './src/state.mjs';

let core;  // one wasm instance for every element on the page

export class GpumemCalculator extends HTMLElement {
  static get observedAttributes() {
    return Object.keys(FIELDS);
  }

  async connectedCallback() {
    if (this.shadowRoot) return;
    const shadow = this.attachShadow({ mode: 'open' });
    const style = document.createElement('link');
    style.rel = 'stylesheet';
    style.href = new URL('./style.css', import.meta.url).href;
    const container = document.createElement('div');
    container.className = 'gpumem';
    shadow.append(style, container);
    core ??= loadGpumem();
    this.calculator = mountCalculator(container, {
      gpumem: await core,
      state: stateFrom((name) => this.getAttribute(name)),
      compact: this.hasAttribute('compact'),
      onChange: (state) => this.dispatchEvent(new CustomEvent('gpumem-change', { detail: state })),
    });
  }

  attributeChangedCallback() {
    this.calculator?.set(stateFrom((name) => this.getAttribute(name)));
  }
}
