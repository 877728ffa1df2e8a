// Assembles the static site in dist/: the page (web/), the wasm module and its facade
// (build/wasm/wasm/), and the presets (presets/). Run by scripts/build.sh.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = `${root}dist/`;

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist);
cpSync(`${root}web/`, dist, { recursive: true });
for (const file of ['gpumem.mjs', 'gpumem_core.mjs', 'gpumem_core.wasm']) {
  cpSync(`${root}build/wasm/wasm/${file}`, `${dist}${file}`);
}
cpSync(`${root}presets/`, `${dist}presets/`, { recursive: true });
console.log(`dist/ assembled at ${dist}`);
