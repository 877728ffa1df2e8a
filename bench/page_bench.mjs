// The page's figures in headless Chromium against dist/ on 127.0.0.1: the bytes a first visit
// needs for its first answer (the page, its worker and the .wasm; gzip as a static host would
// serve them) and what the service worker then pre-caches in the background, the time from
// navigation to the first result, and the longest main-thread task during a scripted edit
// session. Targets (the calculator issue): first result <= 300 ms (median of 5 cold visits),
// first-visit transfer <= 250 KB gzip, no main-thread task over 100 ms while editing. Figures,
// not pass/fail: run by scripts/bench.sh.
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const server = await serve(dist, 0);
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'],
});

const bytes = (paths) => {
  let raw = 0;
  let gzip = 0;
  for (const path of paths) {
    const body = readFileSync(`${dist}${path === '/' ? 'index.html' : path.slice(1)}`);
    raw += body.length;
    gzip += gzipSync(body, { level: 9 }).length;
  }
  return `${(raw / 1024).toFixed(0)} KB, gzip ${(gzip / 1024).toFixed(0)} KB`;
};

const settled = (page) => page.waitForFunction(() => {
  const answer = document.querySelector('.answer');
  return answer && answer.getAttribute('aria-busy') === 'false' && !answer.dataset.pending
    && document.querySelector('[data-testid=verdict], [data-testid=error]');
}, null, { timeout: 60000 });

const times = [];
let firstFiles = [];
let precached = [];
for (let run = 0; run < 5; run++) {
  const context = await browser.newContext();  // a first visit each time: no cache, no worker
  const page = await context.newPage();
  const loaded = [];
  const background = [];
  // What the service worker fetches (its pre-cache, and its own script) comes after the answer.
  // What the page asks for after its first answer (the model catalogue, for the picker) is not
  // needed for it: a file counts when its request started before the first result.
  context.on('requestfinished', (r) => {
    const path = new URL(r.url()).pathname;
    (r.serviceWorker() || path === '/sw.js' ? background : loaded).push({ path, start: r.timing().startTime });
  });
  await page.goto(`${origin}/`);
  await page.waitForSelector('[data-testid=verdict]');
  // The calculator marks its first rendered result; marks count from navigation start.
  const [mark, origin0] = await page.evaluate(() => [performance.getEntriesByName('gpumem-first-result')[0].startTime, performance.timeOrigin]);
  times.push(Math.round(mark));
  firstFiles = [...new Set(loaded.filter((f) => f.start <= origin0 + mark).map((f) => f.path))];
  await page.evaluate(() => navigator.serviceWorker.ready);
  await page.waitForTimeout(500);
  precached = [...new Set(background.map((f) => f.path))];
  const later = [...new Set(loaded.filter((f) => f.start > origin0 + mark).map((f) => f.path))];
  if (run === 0 && later.length) console.log(`page: after the first answer it fetches ${later.join(', ')} (${bytes(later)})`);
  await context.close();
}
times.sort((a, b) => a - b);
console.log(`page: first answer needs ${firstFiles.length} files (${firstFiles.join(', ')})`);
console.log(`page: first-visit transfer ${bytes(firstFiles)} (target <= 250 KB gzip)`);
console.log(`page: then the service worker pre-caches ${precached.length} more files in the background (${bytes(precached)})`);
console.log(`page: navigation to first result, median of 5 cold visits ${times[2]} ms (min ${times[0]}, max ${times[4]}; target <= 300 ms)`);

// An edit session: the model, the GPU, the lengths, the task, a 405B QLoRA plan on 16 GPUs.
const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
await page.goto(`${origin}/?v=1&model=meta-llama%2FLlama-3.1-405B&ft=qlora&gpu=h100-sxm&gpus=8&nodes=2`);
await settled(page);
await page.evaluate(() => {
  window.longTasks = [];
  new PerformanceObserver((list) => window.longTasks.push(...list.getEntries().map((e) => e.duration)))
    .observe({ type: 'longtask' });
});
const edits = [['#gm-seq', '2048'], ['#gm-seq', '4096'], ['#gm-gpus', '4'], ['#gm-seq', '1024']];
for (const [selector, value] of edits) {
  await page.fill(selector, value);
  await settled(page);
}
await page.selectOption('#gm-ft', 'lora');
await settled(page);
await page.click('label.seg-option:has(input[value=inference])');
await settled(page);
const tasks = await page.evaluate(() => window.longTasks);
console.log(`page: longest main-thread task in an edit session of ${edits.length + 2} edits: ${Math.round(Math.max(0, ...tasks))} ms`
  + ` (${tasks.length} tasks over 50 ms; target: none over 100 ms)`);
await browser.close();
server.close();
