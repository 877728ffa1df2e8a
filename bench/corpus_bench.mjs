// The timing guard of the adversarial corpus (tests/adversarial/requests.json): every case sent
// to the optimised native CLI (build/native-release/gpumem, one process a case, so its ~5 ms start
// is included) and through the wasm facade, and the slowest printed. Target: every accepted
// request answers in about a second natively. Figures, not pass/fail: run by scripts/bench.sh.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const corpus = JSON.parse(readFileSync(`${root}tests/adversarial/requests.json`, 'utf8'));
const text = (c) => (c.request ? JSON.stringify(c.request)
  : c.repeat ? c.repeat.before + c.repeat.text.repeat(c.repeat.times) + c.repeat.after : c.raw);

const native = [];
for (const c of corpus.cases) {
  const input = text(c);
  const start = process.hrtime.bigint();
  spawnSync(`${root}build/native-release/gpumem`, ['run', '--request', '-'], { input, maxBuffer: 1 << 26 });
  native.push([Number(process.hrtime.bigint() - start) / 1e6, c.name]);
}
const { loadGpumem } = await import(`${root}build/wasm/wasm/gpumem.mjs`);
const gpumem = await loadGpumem();
const wasm = [];
for (const c of corpus.cases) {
  const input = text(c);
  const start = process.hrtime.bigint();
  gpumem.respond(input);
  wasm.push([Number(process.hrtime.bigint() - start) / 1e6, c.name]);
}
const top = (list) => list.sort((a, b) => b[0] - a[0]).slice(0, 3)
  .map(([ms, name]) => `${ms >= 100 ? ms.toFixed(0) : ms.toFixed(1)} ms (${name})`).join('; ');
console.log(`corpus: ${corpus.cases.length} hostile requests; slowest natively: ${top(native)} (target: about a second)`);
console.log(`corpus: slowest through the wasm facade: ${top(wasm)}`);
