// Where the built artifacts are: the README's build puts the native CLI at build/native/gpumem
// and the wasm module with its facade in build/wasm/wasm/.
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const cliPath = `${repoRoot}build/native/gpumem`;
export const facadePath = `${repoRoot}build/wasm/wasm/gpumem.mjs`;
export const sharedDir = `${repoRoot}../shared/`;
