// The page's figures in headless Chromium against dist/ on 127.0.0.1: the bytes a first visit
// transfers (and their gzip size, as a static host would serve them) and the time from
// navigation to the first result. Targets (issue 7): <= 250 KB gzip, <= 300 ms. Figures, not
// pass/fail: run by scripts/bench.sh.
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

const times = [];
let files = [];
for (let run = 0; run < 5; run++) {
  const context = await browser.newContext();  // a first visit each time: no cache, no worker
  const page = await context.newPage();
  const loaded = [];
  page.on('requestfinished', (r) => loaded.push(new URL(r.url()).pathname));
  await page.goto(`${origin}/`);
  await page.waitForSelector('[data-testid=verdict]');
  // The calculator marks its first rendered result; marks count from navigation start.
  times.push(Math.round(await page.evaluate(() => performance.getEntriesByName('gpumem-first-result')[0].startTime)));
  files = [...new Set(loaded)];
  await context.close();
}
let raw = 0;
let gzip = 0;
for (const path of files) {
  const body = readFileSync(`${dist}${path === '/' ? 'index.html' : path.slice(1)}`);
  raw += body.length;
  gzip += gzipSync(body, { level: 9 }).length;
}
times.sort((a, b) => a - b);
console.log(`page: ${files.length} files on a first visit (${files.join(', ')})`);
console.log(`page: transfer ${(raw / 1024).toFixed(0)} KB, gzip ${(gzip / 1024).toFixed(0)} KB (target <= 250 KB)`);
console.log(`page: navigation to first result, median of 5 cold visits ${times[2]} ms (min ${times[0]}, max ${times[4]}; target <= 300 ms)`);
await browser.close();
server.close();
