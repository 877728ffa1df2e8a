// The adversarial corpus (tests/adversarial/requests.json) through the wasm facade, heavy cases
// included: the outcome docs/api.md promises, never an abort (an 80 MB request once took the
// module past its 2 GB heap).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { repoRoot, facadePath } from './paths.mjs';

const { loadGpumem } = await import(facadePath);
const gpumem = await loadGpumem();
const corpus = JSON.parse(readFileSync(`${repoRoot}tests/adversarial/requests.json`, 'utf8'));

export function requestText(c) {
  if (c.request) return JSON.stringify(c.request);
  if (!c.repeat) return c.raw;
  return c.repeat.before + c.repeat.text.repeat(c.repeat.times) + c.repeat.after;
}

test('every hostile request gets the promised outcome through the facade', () => {
  for (const c of corpus.cases) {
    const response = gpumem.respond(requestText(c));
    const e = c.expect;
    assert.equal(response.ok, e.ok, c.name);
    if (e.code && !response.ok) {
      assert.equal(response.error.code, e.code, c.name);
      if (e.field !== undefined) assert.equal(response.error.field, e.field, c.name);
    }
    if (e.max_response_bytes) assert.ok(JSON.stringify(response).length <= e.max_response_bytes, c.name);
  }
});

test('a request of 80 MB is refused, not an abort, and the module answers after it', () => {
  const big = `{"command":"version","x":[${'0,'.repeat(40_000_000)}0]}`;
  assert.equal(gpumem.respond(big).error.code, 'request.too_large');
  assert.equal(gpumem.respond({ command: 'version' }).ok, true);
});
