// What the page tests share: dist/ served on 127.0.0.1, Debian's Chromium driven by
// playwright-core, the facade for the numbers the page must show, a watch on requests leaving
// 127.0.0.1 and on console errors, and screenshots of the main states at 1366x768 and 390x844
// saved to build/screenshots/ for a person to look at.
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { repoRoot, facadePath } from './paths.mjs';
import { serve } from '../../scripts/serve.mjs';
import { candidateRequest, requestFor, stateFromQuery } from '../../web/src/state.mjs';

const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export const VIEWPORTS = { laptop: { width: 1366, height: 768 }, phone: { width: 390, height: 844 } };
export const screenshotDir = `${repoRoot}build/screenshots/`;

const { loadGpumem } = await import(facadePath);
export const gpumem = await loadGpumem();

export async function startBrowser() {
  const server = await serve(`${repoRoot}dist`, 0);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_FLAGS });
  const outside = [];
  const consoleErrors = [];
  const watch = (page) => {
    page.on('request', (r) => {
      const url = r.url();
      if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('file://') && !url.startsWith('blob:')) outside.push(url);
    });
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    return page;
  };
  // Opens the page at `query` and waits for its answer (a verdict, or an error).
  const open = async (query = '', { viewport = VIEWPORTS.laptop, context = browser, path = '' } = {}) => {
    const page = watch(await context.newPage({ viewport }));
    await page.goto(`${origin}/${path}${query}`);
    await settled(page);
    return page;
  };
  const close = async () => {
    await browser.close();
    server.close();
  };
  return { browser, origin, open, watch, outside, consoleErrors, close };
}

// Waits until the page shows the answer to its current inputs: no edit pending, nothing in
// flight, and a verdict or an error on screen.
export async function settled(page, host = null) {
  await page.waitForFunction((h) => {
    const doc = h ? document.querySelector(h)?.shadowRoot : document;
    const answer = doc?.querySelector('.answer');
    return answer && answer.getAttribute('aria-busy') === 'false' && !answer.dataset.pending
      && (doc.querySelector('[data-testid=verdict]') || doc.querySelector('[data-testid=error]'));
  }, host, { timeout: 30000 });
}

export const shownPeak = async (page) => Number(await page.getAttribute('[data-testid=verdict]', 'data-peak-bytes'));
export const shownVerdict = (page) => page.getAttribute('[data-testid=verdict]', 'data-verdict');
export const stateOf = (page) => stateFromQuery(new URL(page.url()).search);

// What the page must show for a state: for a plan, the chosen (or picked) candidate replayed as an
// estimate; for an estimate, itself.
export function expected(state, model = state.model) {
  const request = requestFor(state, model);
  if (request.command !== 'plan') return gpumem.request(request).result;
  const plan = gpumem.request(request).result;
  const index = state.cand !== '' ? Number(state.cand) : plan.choice ? plan.choice.candidate : 0;
  const candidate = plan.candidates[index];
  return { ...gpumem.request(candidateRequest(request, candidate, state.phase === 'inference')).result, plan, index, candidate };
}

export async function screenshot(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: `${screenshotDir}${name}.png` });
}

// The visible text of the answer and what is below it, for the wording checks: prose only (code
// names a framework's identifiers).
export const visibleText = (page) => page.evaluate(() => [...document.querySelectorAll('.answer, .details, .compare')]
  .map((el) => {
    const copy = el.cloneNode(true);
    for (const code of copy.querySelectorAll('code')) code.remove();
    document.body.append(copy);
    const text = copy.innerText;
    copy.remove();
    return text;
  }).join('\n'));

// Whether an element lies within the first screen (no scrolling).
// true when `selector` is whole on the first screen; otherwise where it is (for the failure message).
export async function onFirstScreen(page, selector) {
  const where = await page.$eval(selector, (el) => {
    const box = el.getBoundingClientRect();
    return { top: box.top, bottom: box.bottom, height: box.height, screen: window.innerHeight, scrolled: window.scrollY };
  });
  return (where.height > 0 && where.top >= 0 && where.bottom <= where.screen) || JSON.stringify(where);
}
