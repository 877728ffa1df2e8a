// Registers the calculator element as <gpumem-calculator> (gpumem-calculator-element.mjs).
import { GpumemCalculator } from './gpumem-calculator-element.mjs';

if (!customElements.get('gpumem-calculator')) customElements.define('gpumem-calculator', GpumemCalculator);
