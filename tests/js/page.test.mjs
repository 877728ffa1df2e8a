// The calculator in Debian's Chromium (headless, driven by playwright-core) against dist/ on
// 127.0.0.1: the answer on the first screen at a laptop's and a phone's size, the facade's
// numbers for the state in the URL, verdicts that are honest about the headroom and the host,
// errors in the form's words, and words a person reads. Screenshots of the main states go to
// build/screenshots/.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  VIEWPORTS, expected, onFirstScreen, screenshot, screenshotDir, settled, shownPeak, shownVerdict, startBrowser, stateOf,
  visibleText,
} from './page_helpers.mjs';
import { defaultState } from '../../web/src/state.mjs';
import { readFileSync } from 'node:fs';
import { repoRoot } from './paths.mjs';

const presetIndex = JSON.parse(readFileSync(`${repoRoot}presets/models/index.json`, 'utf8')).models;

const b = await startBrowser();
test.after(async () => {
  await b.close();
  console.log(`page screenshots: ${screenshotDir}`);
});

const openGroup = (page, id) => page.evaluate((g) => { document.querySelector(`[data-group="${g}"]`).open = true; }, id);

test('the answer comes first: verdict, peak against the memory, method, micro-batch and chart on the first screen', async () => {
  for (const [name, viewport] of Object.entries(VIEWPORTS)) {
    const page = await b.open('', { viewport });
    const want = expected(defaultState());
    assert.equal(await shownPeak(page), want.peak_bytes);
    assert.equal(await shownVerdict(page), 'fits');
    for (const selector of ['[data-testid=verdict]', '[data-testid=choice]', '[data-testid=chart] svg', '[data-testid=title]']) {
      assert.equal(await onFirstScreen(page, selector), true, `${selector} on the first screen at ${name}`);
    }
    // The first inputs a newcomer needs are on the first screen too; the rest is in groups.
    for (const selector of ['#gm-model', '#gm-gpu', '#gm-gpus', '#gm-ft', '#gm-seq', '#gm-mb']) {
      assert.ok(await page.isVisible(selector), `${selector} visible`);
    }
    assert.equal(await page.isVisible('#gm-precision'), false);  // in a closed group
    const verdict = await page.textContent('[data-testid=verdict]');
    assert.match(verdict, /^Fits\. [\d.]+ GiB of 23\.99 GiB per GPU: [\d.]+ GiB \([\d.]+ %\) to spare/);
    assert.match(await page.textContent('[data-testid=choice]'), /^One GPU, micro-batch \d+ per GPU, about [\d,]+ tokens\/s\./);
    assert.match(await page.textContent('[data-testid=title]'), /Llama-3\.1-8B, LoRA, on 1 × NVIDIA GeForce RTX 4090/);
    await screenshot(page, `default-${name}`);
    await page.close();
  }
});

test('changing inputs recomputes the verdict, the chart and the URL; a fixed method estimates it', async () => {
  const page = await b.open();
  await page.fill('#gm-model', 'llama 70');
  await page.click('[data-id="meta-llama/Llama-3.1-70B"]');
  await settled(page);
  assert.match(page.url(), /model=meta-llama%2FLlama-3\.1-70B/);
  // 70B on one 24 GB GPU: only an offload, whose host RAM nobody stated.
  assert.equal(await shownVerdict(page), 'unchecked');
  assert.match(await page.textContent('[data-testid=verdict]'), /needs [\d,.]+ GiB of host RAM per node, which is not checked/);
  await page.selectOption('#gm-gpu', 'h100-sxm');
  await page.fill('#gm-gpus', '8');
  await settled(page);
  const state = stateOf(page);
  assert.equal(state.gpus, '8');
  assert.equal(await shownPeak(page), expected(state).peak_bytes);
  await openGroup(page, 'parallel');
  await page.selectOption('#gm-method', 'zero3');
  await settled(page);
  assert.equal(await page.isVisible('[data-testid=candidates]'), false);
  assert.equal(await shownPeak(page), expected(stateOf(page)).peak_bytes);
  assert.match(await page.textContent('[data-testid=choice]'), /ZeRO-3, micro-batch \d+ per GPU \(the largest that fits\)/);
  await page.fill('#gm-mb', '2');
  await settled(page);
  assert.equal(await shownPeak(page), expected(stateOf(page)).peak_bytes);
  assert.equal(await page.locator('.chart svg text', { hasText: 'GPUs 0–7' }).count(), 1);
  await page.close();
});

test('three verdicts: fits with the headroom, tight without it, does not fit; the headroom is a field', async () => {
  const page = await b.open('?v=1&method=single&mb=1');
  assert.equal(await shownVerdict(page), 'fits');
  const want = expected(stateOf(page));
  const spare = (want.cluster.gpu.memory_bytes - want.device_used_bytes) / want.cluster.gpu.memory_bytes;
  await openGroup(page, 'parallel');
  await page.fill('#gm-headroom', String(Math.ceil(spare * 100) + 1));
  await settled(page);
  assert.equal(await shownVerdict(page), 'tight');
  assert.match(await page.textContent('[data-testid=verdict]'), /^Tight\. .* less than the [\d.]+ % headroom/);
  await screenshot(page, 'tight-laptop');
  await page.fill('#gm-headroom', '0');
  await settled(page);
  assert.equal(await shownVerdict(page), 'fits');
  assert.doesNotMatch(await page.textContent('[data-testid=verdict]'), /keeps/);
  await page.fill('#gm-mb', '40');
  await settled(page);
  assert.equal(await shownVerdict(page), 'no');
  assert.match(await page.textContent('[data-testid=verdict]'), /^Does not fit\. .* short\./);
  await page.close();
});

test('the plan leaves the headroom: a plan never picks a tight micro-batch', async () => {
  for (const query of ['?v=1&model=mistralai%2FMistral-7B-v0.1&ckpt=1', '?v=1&gpu=l4&ckpt=0&seq=512']) {
    const page = await b.open(query);
    const want = expected(stateOf(page));
    if (want.plan.choice) {
      assert.equal(await shownVerdict(page), 'fits');
      assert.ok(want.device_used_bytes <= want.cluster.usable_bytes);
    }
    await page.close();
  }
});

test('host RAM a plan needs but nobody stated is said, never a plain green fit; stated, it is judged', async () => {
  const page = await b.open('?v=1&model=meta-llama%2FLlama-3.1-405B&ft=full');
  assert.equal(await shownVerdict(page), 'unchecked');
  assert.match(await page.textContent('[data-testid=verdict]'), /Fits on the GPUs, if the host has the memory\. .*[\d,]+\.\d\d GiB of host RAM/);
  await screenshot(page, 'host-unchecked-laptop');
  await openGroup(page, 'offload');
  await page.fill('#gm-ram', '256');
  await settled(page);
  assert.notEqual(await shownVerdict(page), 'fits');
  await page.close();
  const fixed = await b.open('?v=1&model=meta-llama%2FLlama-3.1-8B&ft=full&method=zero3&oopt=cpu&oparams=cpu&ram=64&mb=1');
  assert.equal(await shownVerdict(fixed), 'no');
  assert.match(await fixed.textContent('[data-testid=verdict]'), /host RAM .* exceeds the budget/);
  assert.match(await fixed.textContent('[data-testid=host]'), /Host RAM/);
  await openGroup(fixed, 'offload');
  await fixed.fill('#gm-ram', '512');
  await settled(fixed);
  assert.equal(await shownVerdict(fixed), 'fits');
  await fixed.close();
});

test('LLMem mode: from the URL and from the form, also when nothing fits', async () => {
  const page = await b.open('?v=1&mode=llmem&model=facebook%2Fopt-1.3b&gpus=4&gpu=v100-sxm2-16gb');
  assert.equal(await shownPeak(page), expected(stateOf(page)).peak_bytes);
  assert.match(await page.textContent('.details'), /LLMem's estimator is a formula/);
  // 70B on one 16 GB V100 under LLMem: nothing fits, and the page says so.
  const none = await b.open('?v=1&mode=llmem&model=meta-llama%2FLlama-3.1-70B&gpu=v100-sxm2-16gb');
  assert.equal(await shownVerdict(none), 'no');
  assert.match(await none.textContent('[data-testid=choice]'), /Nothing fits at micro-batch 1/);
  await none.close();
  // Chosen from the form: the detailed answer is replaced, and follows the GPU.
  const form = await b.open('?v=1&model=meta-llama%2FLlama-3.1-70B&gpu=v100-sxm2-16gb');
  await openGroup(form, 'output');
  await form.selectOption('#gm-mode', 'llmem');
  await settled(form);
  assert.match(await form.textContent('[data-testid=choice]'), /Nothing fits/);
  await form.selectOption('#gm-gpu', 'h100-sxm');
  await form.fill('#gm-gpus', '8');
  await settled(form);
  assert.equal(await shownPeak(form), expected(stateOf(form)).peak_bytes);
  await form.close();
  await page.close();
});

test('the model field searches the presets without changing the answer until one is picked', async () => {
  const page = await b.open();
  const before = await shownPeak(page);
  await page.fill('#gm-model', 'qwen');
  await page.waitForSelector('#gm-model-list:not([hidden]) [data-id]');
  const options = await page.$$eval('#gm-model-list [data-id]', (els) => els.map((e) => e.dataset.id));
  // By name or by family (Tongyi DeepResearch is a Qwen3-MoE).
  const family = new Map(presetIndex.flatMap((m) => [m.id, ...(m.aliases ?? [])].map((id) => [id, m.family])));
  assert.ok(options.length > 0 && options.every((id) => /qwen/i.test(id) || family.get(id) === 'Qwen'), options.join());
  assert.ok(options.includes('Alibaba-NLP/Tongyi-DeepResearch-30B-A3B'));
  assert.equal(await shownPeak(page), before);
  assert.equal(stateOf(page).model, 'meta-llama/Llama-3.1-8B');
  await page.keyboard.press('Escape');
  assert.equal(await page.inputValue('#gm-model'), 'meta-llama/Llama-3.1-8B');
  await page.fill('#gm-model', 'no such model');
  assert.match(await page.textContent('#gm-model-list'), /No preset matches: paste its config\.json/);
  await page.keyboard.press('Escape');
  await page.fill('#gm-model', 'mixtral');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await settled(page);
  assert.equal(stateOf(page).model, 'mistralai/Mixtral-8x7B-v0.1');
  assert.match(await page.textContent('[data-testid=title]'), /Mixtral-8x7B/);
  // Instruct and chat variants are aliases of their architecture's preset, found by name.
  await page.fill('#gm-model', '3.1 8b instruct');
  await page.waitForSelector('#gm-model-list:not([hidden]) [data-id]');
  assert.deepEqual(await page.$$eval('#gm-model-list [data-id]', (els) => els.map((e) => e.dataset.id)),
    ['meta-llama/Llama-3.1-8B-Instruct', 'meta-llama/Meta-Llama-3.1-8B-Instruct']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await settled(page);
  assert.equal(stateOf(page).model, 'meta-llama/Llama-3.1-8B-Instruct');
  assert.match(await page.textContent('[data-testid=title]'), /Llama-3\.1-8B-Instruct/);
  await page.close();
});

// The first download embeds the default model alone (core/CMakeLists.txt): the catalogue of the
// other presets is one file, fetched after the first answer for the picker, or before it for a
// link that names another preset, and once per visit.
test('the first answer needs no model catalogue; the picker and a link to another preset fetch it once', async () => {
  const context = await b.browser.newContext();
  const fetched = [];
  // (the service worker's pre-cache aside)
  context.on('request', (r) => { if (r.url().endsWith('/catalogue.json') && !r.serviceWorker()) fetched.push(Date.now()); });
  let page = b.watch(await context.newPage());
  await page.goto(`${b.origin}/`);
  await settled(page);
  const firstResult = await page.evaluate(() => performance.timeOrigin + performance.getEntriesByName('gpumem-first-result')[0].startTime);
  await page.fill('#gm-model', 'qwen3 8b');
  await page.waitForSelector('#gm-model-list:not([hidden]) [data-id="Qwen/Qwen3-8B"]');
  assert.equal(fetched.length, 1);
  assert.ok(fetched[0] >= firstResult - 5, 'asked for after the first result');
  await page.keyboard.press('Escape');
  await page.close();
  page = b.watch(await context.newPage());
  await page.goto(`${b.origin}/?model=Qwen/Qwen3-8B&gpu=h100-sxm`);
  await settled(page);
  assert.match(await page.textContent('[data-testid=title]'), /Qwen3-8B/);
  assert.equal(stateOf(page).model, 'Qwen/Qwen3-8B');
  await context.close();
});

test('errors name the form\'s label and the accepted range in its units, and mark the old answer out of date', async () => {
  const page = await b.open();
  await page.fill('#gm-gpus', '0');
  await settled(page);
  assert.equal(await page.textContent('[data-testid=error]'), 'GPUs per node must be a whole number between 1 and 65,536; got 0.');
  assert.equal(await page.isVisible('#gm-gpus-error'), true);
  assert.ok(await page.$eval('.answer-body', (el) => el.classList.contains('stale')));
  assert.match(await page.textContent('.status'), /out of date/);
  await screenshot(page, 'error-laptop');
  await page.fill('#gm-gpus', '1');
  await openGroup(page, 'parallel');
  await page.fill('#gm-mem', '0.1');
  await settled(page);
  assert.equal(await page.textContent('[data-testid=error]'), 'Custom memory (GiB) must be between 0.25 GiB and 16,384.00 GiB; got 0.1.');
  await page.fill('#gm-mem', '');
  await settled(page);
  assert.equal(await page.isVisible('[data-testid=error]'), false);
  assert.ok(!(await page.$eval('.answer-body', (el) => el.classList.contains('stale'))));
  await page.close();
});

test('a LoRA target that names no module is said beside the field', async () => {
  const page = await b.open();
  await openGroup(page, 'lora');
  await page.fill('#gm-targets', 'q_proj,foo_proj');
  await settled(page);
  assert.equal(await page.textContent('#gm-targets-warning'), '“foo_proj” names no module of this model: PEFT skips it.');
  await page.fill('#gm-targets', 'foo_proj');
  await settled(page);
  assert.match(await page.textContent('[data-testid=error]'), /^LoRA targets: /);
  await page.close();
});

test('a bad pasted config.json shows an inline error; invalid JSON marks the answer out of date', async () => {
  const page = await b.open();
  await page.click('.paste summary');
  await page.fill('#gm-config', JSON.stringify({ model_type: 'gpt2', n_embd: 768, n_layer: 12, n_head: 7, vocab_size: 100 }));
  await settled(page);
  assert.match(await page.textContent('#gm-config-error'), /Pasted config\.json, “n_head”: must divide/);
  await page.fill('#gm-config', '{"model_type": ');
  await page.waitForFunction(() => /Not valid JSON/.test(document.querySelector('#gm-config-error').textContent));
  assert.ok(await page.$eval('.answer-body', (el) => el.classList.contains('stale')));
  await page.fill('#gm-config', JSON.stringify({ model_type: 'gpt2', n_embd: 768, n_layer: 12, n_head: 12, vocab_size: 50257 }));
  await settled(page);
  assert.match(await page.textContent('[data-testid=title]'), /pasted config\.json/);
  assert.equal(await page.inputValue('#gm-model'), 'pasted config.json');
  await page.close();
});

test('a pasted T5 config.json gets a decoder-length field and the facade\'s numbers for it', async () => {
  const page = await b.open('?v=1&ft=full&method=single&mb=8&seq=512');
  assert.equal(await page.isVisible('[data-field=tgt]'), false);  // Llama: no decoder stack
  const t5 = {
    model_type: 't5', is_encoder_decoder: true, d_model: 768, d_kv: 64, num_heads: 12, d_ff: 2048,
    num_layers: 12, num_decoder_layers: 12, vocab_size: 32128, feed_forward_proj: 'gated-gelu', tie_word_embeddings: false,
  };
  await page.click('.paste summary');
  await page.fill('#gm-config', JSON.stringify(t5));
  await settled(page);
  assert.equal(await page.isVisible('[data-field=tgt]'), true);
  await page.fill('#gm-tgt', '128');
  await settled(page);
  const want = expected(stateOf(page), { config: t5, name: 'pasted config.json' });
  assert.equal(want.workload.target_len, 128);
  assert.equal(await shownPeak(page), want.peak_bytes);
  assert.match(await page.textContent('.notes'), /T5's attention computes its scores by hand/);
  await page.close();
});

test('words a person reads: no internal id, one number format', async () => {
  const queries = ['', '?v=1&gpu=h100-sxm&gpus=8&ft=full&seq=4096', '?v=1&phase=inference&model=meta-llama%2FLlama-3.1-70B&gpu=h100-sxm&gpus=8',
    '?v=1&model=meta-llama%2FLlama-3.1-70B&ft=full', '?v=1&phase=inference&fw=vllm&weights=awq_4bit&gpu=l4&seq=2000&new=500',
    '?v=1&mode=llmem&model=facebook%2Fopt-1.3b&gpus=4&gpu=v100-sxm2-16gb'];
  for (const query of queries) {
    const page = await b.open(query);
    const text = await visibleText(page);
    // snake_case ids (fsdp_full_shard, awq_4bit, m_init, optimizer_states) and raw method ids.
    assert.doesNotMatch(text.replace(/“[^”]*”/g, ''), /\b[a-z0-9]+_[a-z0-9_]+\b/, `${query}: ${text.match(/\b[a-z0-9]+_[a-z0-9_]+\b/)}`);
    assert.doesNotMatch(text, /\b(single|zero[123]|ddp|cdp|adp) (is|on)\b/);
    assert.doesNotMatch(text, /\b\d{4,}\.\d\b|\b\d{5,}(?![\d,.])/, `${query}: ungrouped number`);
    assert.doesNotMatch(text, /\b1 sequences\b|\b1 GPUs\b/);
    await page.close();
  }
});

test('the memory over the step: phases named, the peak marked with what is alive', async () => {
  for (const [name, viewport] of Object.entries(VIEWPORTS)) {
    const page = await b.open('?v=1&gpu=h100-sxm&ft=full&method=single&mb=2', { viewport });
    const caption = await page.textContent('[data-testid=timeline] figcaption');
    assert.match(caption, /At the peak \(the (backward pass|forward pass|loss|optimizer step)\), allocated: .*Weights [\d.]+ GiB/);
    // Every phase is a band with its name (written on it where it is wide enough).
    const bands = await page.$$eval('[data-testid=timeline] svg rect.phase-band title', (els) => els.map((e) => e.textContent));
    for (const phase of ['loading', 'forward pass', 'loss', 'backward pass', 'optimizer step', 'step 2: forward pass']) {
      assert.ok(bands.includes(phase), `${phase} in ${bands}`);
    }
    if (name === 'laptop') assert.ok(await page.locator('[data-testid=timeline] svg text', { hasText: 'backward pass' }).count() > 0);
    await page.locator('[data-testid=timeline]').scrollIntoViewIfNeeded();
    await screenshot(page, `timeline-${name}`);
    await page.close();
  }
});

test('the core runs off the main thread: no long task while editing', async () => {
  const page = await b.open('?v=1&model=meta-llama%2FLlama-3.1-405B&ft=qlora&gpu=h100-sxm&gpus=8&nodes=2');
  await page.evaluate(() => {
    window.longTasks = [];
    new PerformanceObserver((list) => window.longTasks.push(...list.getEntries().map((e) => e.duration)))
      .observe({ type: 'longtask', buffered: false });
  });
  assert.equal(await page.evaluate(() => typeof createGpumemCore), 'undefined');  // not on the page
  for (const seq of ['2048', '4096', '1024']) {
    await page.fill('#gm-seq', seq);
    await settled(page);
  }
  const longest = Math.max(0, ...(await page.evaluate(() => window.longTasks)));
  assert.ok(longest < 100, `longest main-thread task ${longest} ms`);
  await page.close();
});

test('no request leaves 127.0.0.1 and the console stays clean', () => {
  assert.deepEqual(b.outside, []);
  assert.deepEqual(b.consoleErrors, []);
});
