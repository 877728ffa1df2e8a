// The regression corpus: every answer byte for byte as recorded (tools/regression/), so that a
// restructuring or a speed-up of the engine changes no number. A change meant to move numbers
// records the corpus again (node tools/regression/record.mjs) and says why.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { repoRoot, facadePath } from './paths.mjs';
import { corpusRequests, digest } from '../../tools/regression/corpus.mjs';

const { loadGpumem } = await import(facadePath);
const gpumem = await loadGpumem();
const estimator = await loadGpumem({ core: 'estimator' });
const recorded = JSON.parse(readFileSync(`${repoRoot}tests/regression/digests.json`, 'utf8'));

test('every answer of the regression corpus is byte for byte as recorded', () => {
  const changed = [];
  let compared = 0;
  for (const { name, text } of corpusRequests(repoRoot)) {
    if (!(name in recorded)) continue;
    compared += 1;
    if (digest(gpumem.respondText(text)) !== recorded[name]) changed.push(name);
  }
  assert.ok(compared >= 700, `${compared} answers compared`);
  assert.deepEqual(changed, []);
});

// A request's text as the object it holds (the text itself when it holds none).
function asObject(text) {
  try {
    const request = JSON.parse(text);
    return request && typeof request === 'object' && !Array.isArray(request) ? request : text;
  } catch {
    return text;
  }
}

// The commands only the full module answers.
const FULL_ONLY = ['export', 'import', 'validate', 'sources'];

// The page's first download, the estimator's build (wasm/CMakeLists.txt): the same answers for
// every command it takes, and the commands it leaves out refused, naming the full module.
test('the estimator\'s build answers its commands byte for byte as the full module does', () => {
  const changed = [];
  let compared = 0;
  for (const { name, text } of corpusRequests(repoRoot)) {
    const command = JSON.parse(text).command;
    if (!(name in recorded) || FULL_ONLY.includes(command)) continue;
    compared += 1;
    // (as an object, so that the facade adds the preset it names from the catalogue: the
    // estimator's build embeds the page's default model alone)
    if (digest(estimator.respondText(asObject(text))) !== recorded[name]) changed.push(name);
  }
  assert.ok(compared >= 700, `${compared} answers compared`);
  assert.deepEqual(changed, []);
  for (const command of FULL_ONLY) {
    const refused = estimator.respond({ command });
    assert.equal(refused.error.code, 'request.full_module');
    assert.equal(refused.error.field, 'command');
    assert.match(refused.error.message, /full module/);
  }
});
