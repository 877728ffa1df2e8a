// The README's serving script (scripts/serve.mjs): only files inside its folder, 400 for a URL it
// cannot decode (it once died on one), and the security headers a static host should send.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { serve } from '../../scripts/serve.mjs';

// A served folder "dist" beside a sibling whose name starts with it.
const root = mkdtempSync(`${tmpdir()}/gpumem-serve-`);
mkdirSync(`${root}/dist`);
mkdirSync(`${root}/dist-secret`);
writeFileSync(`${root}/dist/index.html`, '<!doctype html><title>page</title>');
writeFileSync(`${root}/dist/embed.html`, '<!doctype html><title>embed</title>');
writeFileSync(`${root}/dist/core.js`, '// core');
writeFileSync(`${root}/dist-secret/secret.txt`, 'secret');
const server = await serve(`${root}/dist`, 0);
const port = server.address().port;
test.after(() => server.close());

// A raw GET (fetch would normalise the path before sending it).
function get(path) {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => done({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

test('a URL it cannot decode is a 400, and the server lives on', async () => {
  assert.equal((await get('/%E0%A4%A')).status, 400);
  assert.equal((await get('/index.html')).status, 200);
});

test('nothing outside the folder is served, a sibling with the same prefix included', async () => {
  for (const path of ['/..%2fdist-secret%2fsecret.txt', '/../dist-secret/secret.txt', '/%2e%2e/dist-secret/secret.txt',
    '/..%5cdist-secret%5csecret.txt', '/%00']) {
    const r = await get(path);
    assert.ok([400, 403, 404].includes(r.status), `${path}: ${r.status}`);
    assert.doesNotMatch(r.body, /secret/);
  }
});

test('the security headers a static host would send', async () => {
  const page = await get('/');
  assert.equal(page.status, 200);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  assert.equal(page.headers['referrer-policy'], 'no-referrer');
  assert.match(page.headers['content-security-policy'], /default-src 'self'.*frame-ancestors 'none'/);
  const embed = await get('/embed.html');
  assert.match(embed.headers['content-security-policy'], /frame-ancestors \*/);
  const script = await get('/core.js');
  assert.equal(script.headers['x-content-type-options'], 'nosniff');
  assert.equal(script.headers['content-security-policy'], undefined);
});
