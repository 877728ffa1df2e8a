// Records tests/regression/digests.json: the digest of every answer of the regression corpus
// through the wasm facade (build it first: scripts/build.sh). Run it only when an answer is meant
// to change, and say why in the commit.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { answerDigests } from './corpus.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const { loadGpumem } = await import(`${root}build/wasm/wasm/gpumem.mjs`);
const digests = await answerDigests(root, await loadGpumem());
writeFileSync(`${root}tests/regression/digests.json`, `${JSON.stringify(digests, null, 1)}\n`);
console.log(`${Object.keys(digests).length} answers recorded in tests/regression/digests.json`);
