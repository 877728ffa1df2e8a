// The calculator in Debian's Chromium (headless, driven by playwright-core) against dist/ served
// on 127.0.0.1 and opened from file://: its numbers are the facade's for the same request, it
// reacts to input, keeps its state in the URL, works offline through its service worker, embeds
// as a custom element and in an iframe page, and asks nothing of the network beyond 127.0.0.1.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { repoRoot, facadePath } from './paths.mjs';
import { serve } from '../../scripts/serve.mjs';
import { defaultState, requestFor, stateFromQuery } from '../../web/src/state.mjs';

const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const { loadGpumem } = await import(facadePath);
const gpumem = await loadGpumem();
const server = await serve(`${repoRoot}dist`, 0);
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_FLAGS });
const outside = [];
const consoleErrors = [];

function watch(page) {
  page.on('request', (r) => {
    const url = r.url();
    if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('file://')) outside.push(url);
  });
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  return page;
}

async function openPage(query = '', context = browser) {
  const page = watch(await context.newPage());
  await page.goto(`${origin}/${query}`);
  await page.waitForSelector('[data-testid=verdict]');
  return page;
}

const shownPeak = async (page) => Number(await page.getAttribute('[data-testid=verdict]', 'data-peak-bytes'));

// The peak the facade gives for the request a state stands for (a plan: the chosen method's).
function facadePeak(state) {
  const request = requestFor(state, state.model);
  const result = gpumem.request(request).result;
  return request.command === 'plan' ? result.choice.peak_bytes : result.peak_bytes;
}

test.after(async () => {
  await browser.close();
  server.close();
});

test('the default view: Llama-3.1-8B LoRA on one 24 GB GPU, with the facade\'s numbers', async () => {
  const page = await openPage();
  assert.equal(await shownPeak(page), facadePeak(defaultState()));
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-fits'), 'true');
  assert.match(await page.textContent('[data-testid=choice]'), /micro-batch \d+/);
  assert.ok(await page.isVisible('.chart svg rect'));
  assert.match(await page.textContent('[data-testid=components]'), /weights/);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: `${repoRoot}docs/screenshot.png`, fullPage: true });
  await page.close();
});

test('changing inputs recomputes the verdict, the chart and the URL', async () => {
  const page = await openPage();
  await page.selectOption('#gm-model', 'meta-llama/Llama-3.1-70B');
  // 70B does not fit on one 24 GB GPU alone: the plan turns to offloading.
  await page.waitForFunction(() => /with offloading/.test(document.querySelector('[data-testid=choice]')?.textContent));
  assert.match(page.url(), /model=meta-llama%2FLlama-3\.1-70B/);
  await page.selectOption('#gm-method', 'single');
  await page.waitForSelector('[data-testid=verdict][data-fits=false]');
  assert.match(await page.textContent('[data-testid=verdict]'), /Does not fit.*short/);
  await page.selectOption('#gm-method', 'auto');
  await page.selectOption('#gm-gpu', 'h100-sxm');
  await page.fill('#gm-gpus', '8');
  await page.waitForSelector('[data-testid=verdict][data-fits=true]');
  const state = stateFromQuery(new URL(page.url()).search);
  assert.equal(state.gpus, '8');
  assert.equal(await shownPeak(page), facadePeak(state));
  // A fixed method shows that method's estimate; another candidate row shows its own bars.
  await page.selectOption('#gm-method', 'zero3');
  await page.waitForFunction(() => !document.querySelector('[data-testid=candidates]'));
  assert.equal(await shownPeak(page), facadePeak(stateFromQuery(new URL(page.url()).search)));
  assert.equal(await page.locator('.chart svg text', { hasText: 'GPUs 0–7' }).count(), 1);
  await page.close();
});

test('the training loop choice reaches the request, and hides for frameworks with their own', async () => {
  // Allocated bytes: near a card's capacity the allocator gives cached blocks back, so what it
  // reserves need not grow with what is allocated.
  const page = await openPage('?v=1&method=single&mb=4&metric=allocated');
  const trainer = await shownPeak(page);
  await page.selectOption('#gm-loop', 'outputs');
  await page.waitForFunction((before) => Number(document.querySelector('[data-testid=verdict]')
    .getAttribute('data-peak-bytes')) !== before, trainer);
  const state = stateFromQuery(new URL(page.url()).search);
  assert.equal(state.loop, 'outputs');
  assert.equal(await shownPeak(page), facadePeak(state));
  assert.ok(await shownPeak(page) > trainer);  // the held logits
  await page.selectOption('#gm-fw', 'litgpt');
  await page.waitForSelector('[data-field=loop]', { state: 'hidden' });
  await page.close();
});

test('trained copies (modules_to_save) reach the request, and hide for full fine-tuning', async () => {
  const page = await openPage('?v=1&method=single&targets=q_proj,v_proj&metric=allocated');
  const adapters = await shownPeak(page);
  await page.fill('#gm-save', 'lm_head');
  await page.waitForFunction((before) => Number(document.querySelector('[data-testid=verdict]')
    .getAttribute('data-peak-bytes')) !== before, adapters);
  const state = stateFromQuery(new URL(page.url()).search);
  assert.equal(state.save, 'lm_head');
  assert.deepEqual(requestFor(state, state.model).workload.lora.modules_to_save, ['lm_head']);
  assert.equal(await shownPeak(page), facadePeak(state));
  assert.ok(await shownPeak(page) > adapters);  // the LM head's trained copy and its states
  await page.selectOption('#gm-ft', 'full');
  await page.waitForSelector('[data-field=save]', { state: 'hidden' });
  await page.close();
});

test('library releases and the LoRA dropout reach the request, shown where they change something', async () => {
  const page = await openPage('?v=1&method=single&ft=qlora&ckpt=0&mb=2&metric=allocated');
  const before = await shownPeak(page);
  await page.fill('#gm-bnb', '0.45.0');
  await page.waitForFunction((peak) => Number(document.querySelector('[data-testid=verdict]')
    .getAttribute('data-peak-bytes')) !== peak, before);
  let state = stateFromQuery(new URL(page.url()).search);
  assert.equal(state.bnb, '0.45.0');
  assert.deepEqual(requestFor(state, state.model).workload.software, { bitsandbytes: '0.45.0' });
  assert.equal(await shownPeak(page), facadePeak(state));
  assert.ok(await shownPeak(page) < before);  // the 4-bit linears keep no input
  // torch 1.x has no SDPA: the error names the attention field until eager is chosen.
  await page.fill('#gm-torch', '1.13');
  await page.waitForSelector('[data-testid=error]');
  assert.match(await page.textContent('[data-testid=error]'), /workload\.attention/);
  await page.selectOption('#gm-attn', 'eager');
  await page.waitForSelector('[data-testid=verdict]');
  state = stateFromQuery(new URL(page.url()).search);
  assert.equal(await shownPeak(page), facadePeak(state));
  // PEFT's LoRA dropout: each adapter keeps a mask and its own dropped-out copy.
  const undropped = await shownPeak(page);
  await page.fill('#gm-ldrop', '0.1');
  await page.waitForFunction((peak) => Number(document.querySelector('[data-testid=verdict]')
    .getAttribute('data-peak-bytes')) !== peak, undropped);
  state = stateFromQuery(new URL(page.url()).search);
  assert.equal(requestFor(state, state.model).workload.lora.dropout, 0.1);
  assert.equal(await shownPeak(page), facadePeak(state));
  assert.ok(await shownPeak(page) > undropped);
  await page.selectOption('#gm-fw', 'litgpt');
  await page.waitForSelector('[data-field=torch]', { state: 'hidden' });
  assert.ok(await page.isHidden('[data-field=peft]'));
  assert.ok(await page.isVisible('[data-field=bnb]'));
  await page.close();
});

test('torchtitan with its per-op selective checkpoint reaches the request', async () => {
  const page = await openPage('?v=1&model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm&method=fsdp_full_shard&gpus=8&ft=full&mb=2&seq=8192');
  const full = await shownPeak(page);
  await page.selectOption('#gm-fw', 'torchtitan');
  await page.selectOption('#gm-ckpt', 'selective');
  const state = stateFromQuery(new URL(page.url()).search);
  assert.equal(state.fw, 'torchtitan');
  assert.equal(state.ckpt, 'selective');
  assert.equal(requestFor(state, state.model).workload.grad_ckpt, 'selective');
  const expected = facadePeak(state);
  await page.waitForFunction((peak) => Number(document.querySelector('[data-testid=verdict]')
    .getAttribute('data-peak-bytes')) === peak, expected);
  assert.ok(expected > full);  // the kept matmul outputs beside every block's input
  await page.waitForSelector('[data-field=loop]', { state: 'hidden' });
  await page.close();
});

test('a candidate row can be picked with the keyboard', async () => {
  const page = await openPage('?v=1&model=meta-llama%2FLlama-3.1-8B&gpu=a100-sxm4-80gb&gpus=4');
  const rows = await page.locator('[data-candidate]').count();
  assert.ok(rows >= 5);
  await page.focus('[data-candidate="1"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-candidate="1"][aria-pressed=true]');
  await page.close();
});

test('the URL restores the state, and back/forward restore earlier states', async () => {
  const query = '?v=1&model=mistralai%2FMistral-7B-v0.1&gpu=l4&phase=inference&weights=nf4&mb=4&seq=4096&new=512&unit=gb';
  const page = await openPage(query);
  assert.equal(await page.inputValue('#gm-weights'), 'nf4');
  assert.equal(await page.inputValue('#gm-unit'), 'gb');
  assert.equal(await shownPeak(page), facadePeak(stateFromQuery(query)));
  assert.match(await page.textContent('[data-testid=verdict]'), / GB /);
  await page.goto(`${origin}/?v=1&model=gpt2&gpu=t4`);
  await page.waitForSelector('[data-testid=verdict]');
  assert.equal(await page.inputValue('#gm-model'), 'gpt2');
  await page.goBack();
  await page.waitForFunction(() => document.querySelector('#gm-weights')?.value === 'nf4');
  await page.waitForSelector('[data-testid=verdict]');
  assert.equal(await shownPeak(page), facadePeak(stateFromQuery(query)));
  await page.goForward();
  await page.waitForFunction(() => document.querySelector('#gm-model')?.value === 'gpt2');
  await page.close();
});

test('inference: the KV cache line and the fewest GPUs that serve', async () => {
  const page = await openPage('?v=1&model=meta-llama%2FLlama-3.1-70B&gpu=h100-sxm&gpus=8&phase=inference&seq=8192&new=512');
  assert.match(await page.textContent('[data-testid=choice]'), /Tensor parallel on 2 GPUs/);
  await page.selectOption('#gm-method', 'tensor_parallel');
  await page.waitForSelector('[data-testid=kv]');
  assert.match(await page.textContent('[data-testid=kv]'), /KV cache .* bytes per token/);
  await page.close();
});

test('offloading: the plan picks an offload and shows its host RAM and NVMe; a fixed one charts them', async () => {
  const query = '?v=1&model=meta-llama%2FLlama-3.1-70B&ft=full&ram=128&disk=1862';
  const page = await openPage(query);
  assert.equal(await shownPeak(page), facadePeak(stateFromQuery(query)));
  assert.match(await page.textContent('[data-testid=choice]'), /with offloading/);
  assert.match(await page.textContent('[data-testid=offload]'), /optimizer → NVMe.*of NVMe per node/);
  const fixed = '?v=1&model=meta-llama%2FLlama-3.1-8B&ft=full&method=zero3&oopt=cpu&oparams=cpu&ram=64';
  await page.goto(`${origin}/${fixed}`);
  await page.waitForSelector('[data-testid=host]');
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-fits'), 'false');
  assert.match(await page.textContent('[data-testid=verdict]'), /host RAM .* exceeds the budget/);
  assert.match(await page.textContent('[data-testid=host]'), /optimizer_states/);
  await page.fill('#gm-ram', '256');
  await page.waitForSelector('[data-testid=verdict][data-fits=true]');
  await page.close();
});

test('LLMem mode: the paper\'s estimator and planner, with its notes', async () => {
  const query = '?v=1&mode=llmem&model=facebook%2Fopt-1.3b&gpus=4&gpu=v100-sxm2-16gb';
  const page = await openPage(query);
  assert.equal(await shownPeak(page), facadePeak(stateFromQuery(query)));
  await page.selectOption('#gm-method', 'adp');
  await page.fill('#gm-mb', '8');
  await page.waitForFunction(() => !document.querySelector('[data-testid=candidates]'));
  await page.waitForSelector('[data-testid=verdict]');
  // The page recomputes as each field changes: wait (up to 5 s) until it shows its URL's state.
  const expected = () => facadePeak(stateFromQuery(new URL(page.url()).search));
  for (let i = 0; i < 50 && (await shownPeak(page)) !== expected(); ++i) await page.waitForTimeout(100);
  assert.equal(await shownPeak(page), expected());
  assert.ok(await page.locator('.notes li').count() > 0);
  await page.close();
});

test('a bad config.json shows an inline error naming the field', async () => {
  const page = await openPage();
  await page.click('.paste summary');
  await page.fill('#gm-config', JSON.stringify({ model_type: 'gpt2', n_embd: 768, n_layer: 12, n_head: 7, vocab_size: 100 }));
  await page.waitForSelector('#gm-config-error:not([hidden])');
  assert.match(await page.textContent('#gm-config-error'), /n_head.*config\.inconsistent_heads/);
  await page.fill('#gm-config', '{"model_type": ');
  await page.waitForFunction(() => /Not valid JSON/.test(document.querySelector('#gm-config-error').textContent));
  await page.fill('#gm-config', JSON.stringify({ model_type: 'gpt2', n_embd: 768, n_layer: 12, n_head: 12, vocab_size: 50257 }));
  await page.waitForFunction(() => document.querySelector('#gm-config-error').hidden
    && /config\.json|gpt2/.test(document.querySelector('.result h2')?.textContent ?? ''));
  await page.waitForSelector('[data-testid=verdict]');
  await page.close();
});

test('a pasted T5 config.json gets a decoder-length field and the facade\'s numbers for it', async () => {
  const page = await openPage('?v=1&ft=full&method=single&mb=8&seq=512');
  assert.equal(await page.isVisible('[data-field=tgt]'), false);  // Llama: no decoder stack
  const t5 = {
    model_type: 't5', is_encoder_decoder: true, d_model: 768, d_kv: 64, num_heads: 12, d_ff: 2048,
    num_layers: 12, num_decoder_layers: 12, vocab_size: 32128, feed_forward_proj: 'gated-gelu',
    tie_word_embeddings: false,
  };
  await page.click('.paste summary');
  await page.fill('#gm-config', JSON.stringify(t5));
  await page.waitForFunction(() => /T5ForConditionalGeneration/.test(document.querySelector('.result h2')?.textContent ?? ''));
  assert.equal(await page.isVisible('[data-field=tgt]'), true);
  await page.fill('#gm-tgt', '128');
  const state = { ...stateFromQuery('?v=1&ft=full&method=single&mb=8&seq=512'), tgt: '128' };
  const expected = gpumem.request(requestFor(state, { config: t5, name: 'pasted config.json' })).result;
  assert.equal(expected.workload.target_len, 128);
  await page.waitForFunction((peak) => document.querySelector('[data-testid=verdict]')
    ?.getAttribute('data-peak-bytes') === String(peak), expected.peak_bytes);
  assert.match(await page.textContent('.notes'), /T5's attention computes its scores by hand/);
  await page.close();
});

test('the copy buttons give the link, the JSON request and an equivalent CLI command', async () => {
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await openPage('?v=1&gpus=2', context);
  await page.click('#copy-json');
  const request = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  assert.deepEqual(request, requestFor(stateFromQuery('?v=1&gpus=2'), 'meta-llama/Llama-3.1-8B'));
  await page.click('#copy-cli');
  assert.match(await page.evaluate(() => navigator.clipboard.readText()),
    /^gpumem plan --model meta-llama\/Llama-3\.1-8B --gpu rtx-4090 --gpus 2 .*--grad-ckpt/);
  await page.click('#copy-link');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), page.url());
  await context.close();
});

test('offline: after the first visit the service worker serves the whole site', async () => {
  const context = await browser.newContext();
  const page = await openPage('', context);
  await page.evaluate(() => navigator.serviceWorker.ready);
  await page.reload();  // now controlled by the worker
  await page.waitForSelector('[data-testid=verdict]');
  await context.setOffline(true);
  await page.reload();
  await page.waitForSelector('[data-testid=verdict]');
  assert.equal(await shownPeak(page), facadePeak(defaultState()));
  await context.close();
});

test('a new version of the site is offered with a prompt, and taken on reload', async () => {
  const swPath = `${repoRoot}dist/sw.js`;
  const original = readFileSync(swPath, 'utf8');
  const context = await browser.newContext();
  try {
    const page = await openPage('', context);
    await page.evaluate(() => navigator.serviceWorker.ready);
    await page.reload();
    await page.waitForSelector('[data-testid=verdict]');
    writeFileSync(swPath, `${original}// a new version\n`);
    await page.reload();  // the browser checks sw.js on navigation and installs the new one
    await page.waitForSelector('#update:not([hidden])');
    await Promise.all([page.waitForNavigation(), page.click('#update-reload')]);
    await page.waitForSelector('[data-testid=verdict]');
    assert.equal(await page.isVisible('#update'), false);
  } finally {
    writeFileSync(swPath, original);
    await context.close();
  }
});

test('the custom element and embed.html render the calculator', async () => {
  const page = watch(await browser.newPage());
  await page.goto(`${origin}/embed.html?v=1&model=gpt2&gpu=t4&ft=full`);
  await page.waitForSelector('[data-testid=verdict]');
  assert.equal(await shownPeak(page), facadePeak(stateFromQuery('?model=gpt2&gpu=t4&ft=full')));
  assert.equal(await page.isVisible('#gm-mem'), false);  // compact
  // A host page with the element (its markup set from the test: the site has no such page).
  await page.goto(`${origin}/index.html`);
  await page.evaluate(async () => {
    await import('./gpumem-calculator.mjs');
    document.body.innerHTML = '<gpumem-calculator model="gpt2" gpu="t4" ft="full" compact></gpumem-calculator>';
  });
  await page.waitForFunction(() => document.querySelector('gpumem-calculator')?.shadowRoot
    ?.querySelector('[data-testid=verdict]'));
  const peak = await page.evaluate(() => document.querySelector('gpumem-calculator').shadowRoot
    .querySelector('[data-testid=verdict]').dataset.peakBytes);
  assert.equal(Number(peak), facadePeak(stateFromQuery('?model=gpt2&gpu=t4&ft=full')));
  await page.close();
});

test('a downloaded copy works from file:// (double-clicking index.html)', async () => {
  const page = watch(await browser.newPage());
  await page.goto(`file://${repoRoot}dist/index.html?v=1&model=gpt2&gpu=t4`);
  await page.waitForSelector('[data-testid=verdict]', { timeout: 20000 });
  assert.equal(await shownPeak(page), facadePeak(stateFromQuery('?model=gpt2&gpu=t4')));
  await page.close();
});

test('no request leaves 127.0.0.1 and the console stays clean', () => {
  assert.deepEqual(outside, []);
  assert.deepEqual(consoleErrors, []);
});
