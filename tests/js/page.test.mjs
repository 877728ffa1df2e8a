// The calculator page in Debian's Chromium (headless, driven by playwright-core) against dist/
// served on 127.0.0.1: it shows the facade's numbers, reacts to input, and asks nothing of the
// network beyond 127.0.0.1.
import test from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { repoRoot, facadePath } from './paths.mjs';
import { serve } from '../../scripts/serve.mjs';

const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const { loadGpumem } = await import(facadePath);
const gpumem = await loadGpumem();
const server = await serve(`${repoRoot}dist`, 0);
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_FLAGS });
const outside = [];
const consoleErrors = [];

async function openPage(query = '') {
  const page = await browser.newPage();
  page.on('request', (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) outside.push(r.url()); });
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  await page.goto(`${origin}/${query}`);
  await page.waitForSelector('[data-testid=total-params]');
  return page;
}

const shown = async (page) => Number((await page.textContent('[data-testid=total-params]')).replace(/,/g, ''));

test.after(async () => {
  await browser.close();
  server.close();
});

test('the default view shows the facade\'s count for Llama-3.1-8B', async () => {
  const page = await openPage();
  assert.equal(await shown(page), gpumem.params('meta-llama/Llama-3.1-8B').total_params);
  await page.close();
});

test('picking a preset updates the numbers and the URL', async () => {
  const page = await openPage();
  await page.selectOption('#model', 'mistralai/Mixtral-8x7B-v0.1');
  await page.waitForFunction(() => document.querySelector('[data-testid=active-params]').textContent === '12,879,925,248');
  assert.equal(await shown(page), gpumem.params('mistralai/Mixtral-8x7B-v0.1').total_params);
  assert.match(page.url(), /model=mistralai%2FMixtral-8x7B-v0.1/);
  const reopened = await openPage(`?model=${encodeURIComponent('gpt2')}`);
  assert.equal(await shown(reopened), 124439808);
  await page.close();
  await reopened.close();
});

test('a bad config.json shows an inline error naming the field', async () => {
  const page = await openPage();
  await page.click('#paste summary');
  await page.fill('#config', JSON.stringify({ model_type: 'gpt2', n_embd: 768, n_layer: 12, n_head: 7, vocab_size: 100 }));
  await page.waitForSelector('#config-error:not([hidden])');
  assert.match(await page.textContent('#config-error'), /n_head.*config\.inconsistent_heads/);
  await page.fill('#config', '{"model_type": ');
  await page.waitForFunction(() => /Not valid JSON/.test(document.querySelector('#config-error').textContent));
  await page.fill('#config', JSON.stringify({ model_type: 'gpt2', n_embd: 768, n_layer: 12, n_head: 12, vocab_size: 50257 }));
  await page.waitForFunction(() => document.querySelector('#config-error').hidden);
  assert.equal(await shown(page), 124439808);
  await page.close();
});

test('no request leaves 127.0.0.1 and the console stays clean', () => {
  assert.deepEqual(outside, []);
  assert.deepEqual(consoleErrors, []);
});
