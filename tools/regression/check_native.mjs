// The regression corpus against a native CLI (default build/native-release/gpumem): a quicker
// check while restructuring than a wasm build. Prints the requests whose answers changed.
// Usage: node tools/regression/check_native.mjs [path/to/gpumem]
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { corpusRequests, digest } from './corpus.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = process.argv[2] ?? `${root}build/native-release/gpumem`;
const recorded = JSON.parse(readFileSync(`${root}tests/regression/digests.json`, 'utf8'));
const changed = [];
let compared = 0;
for (const { name, text } of corpusRequests(root)) {
  if (!(name in recorded)) continue;
  const out = spawnSync(cli, ['run', '--request', '-'], { input: text, maxBuffer: 1 << 28 }).stdout.toString();
  compared += 1;
  if (digest(out.replace(/\n$/, '')) !== recorded[name]) changed.push(name);
}
console.log(`${compared} answers compared, ${changed.length} changed${changed.length ? `: ${changed.slice(0, 20).join('; ')}` : ''}`);
process.exit(changed.length ? 1 : 0);
