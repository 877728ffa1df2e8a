// Where the built artifacts are: the README's build puts the native CLI at build/native/gpumem
// and the wasm module with its facade in build/wasm/wasm/.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const cliPath = `${repoRoot}build/native/gpumem`;
export const facadePath = `${repoRoot}build/wasm/wasm/gpumem.mjs`;
export const sharedDir = `${repoRoot}../shared/`;

// The shipped model presets by Hugging Face id (presets/models/).
export function readPresets() {
  const dir = `${repoRoot}presets/models/`;
  const index = JSON.parse(readFileSync(`${dir}index.json`, 'utf8')).models;
  return Object.fromEntries(index.map((m) => [m.id, JSON.parse(readFileSync(dir + m.file, 'utf8'))]));
}
