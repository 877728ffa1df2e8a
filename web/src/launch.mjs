// "Launch it": the files and the command that run the setup on screen, as the core's export
// writes them (docs/api.md, export), each with a copy button. A YAML file is written by npm's
// yaml (YAML 1.1, as PyYAML reads accelerate's config), loaded only when one is first shown
// (yaml.js). Nothing here decides a value: the core does.
import { escapeHtml, messageText } from './format.mjs';
import { copyText } from './clipboard.mjs';
import { yaml } from './classic_scripts.mjs';

const LABELS = {
  deepspeed: 'DeepSpeed', accelerate: 'accelerate', axolotl: 'axolotl', litgpt: 'litgpt', torchtune: 'torchtune', torchrun: 'torchrun',
  transformers: 'transformers',
  vllm: 'vLLM', llama_cpp: 'llama.cpp',
};

// The estimate request of the setup shown: the view's detail, at the micro-batch it shows.
export function launchRequest(view) {
  if (!view.detailRequest || !view.detail || view.llmem) return null;
  const out = JSON.parse(JSON.stringify(view.detailRequest));
  out.command = 'export';
  delete out.solve;
  delete out.options;
  if (!view.serving && view.detail.workload?.micro_batch) out.workload.micro_batch = view.detail.workload.micro_batch;
  return out;
}

// The formats that can run the setup on screen (the core refuses the rest with its reason).
export function launchFormats(view) {
  const request = launchRequest(view);
  if (!request) return [];
  const w = request.workload;
  if (view.serving) return w.framework === 'vllm' || w.framework === 'llama_cpp' ? [w.framework] : [];
  if (w.framework === 'litgpt' || w.framework === 'torchtune') return [w.framework];
  if ((w.framework ?? 'transformers') !== 'transformers') return [];
  const p = request.parallel ?? {};
  if ((p.tp ?? 1) > 1 || (p.cp ?? 1) > 1 || ['tensor_parallel', 'pipeline', 'gemini'].includes(p.method)) return [];
  const zero = ['zero1', 'zero2', 'zero3'].includes(p.method);
  return [...(zero ? ['deepspeed'] : []), 'accelerate', 'axolotl', 'transformers', 'torchrun'];
}

export function launchHtml(view) {
  const formats = launchFormats(view);
  const why = view.serving
    ? 'vLLM and llama.cpp setups get their launch line: choose one of them as the framework.'
    : 'Launch files are written for transformers, litgpt and torchtune setups without tensor, context or pipeline parallelism.';
  if (view.llmem) return '';
  const exported = !launchRequest(view) ? '' : formats.length
    ? `<p class="hint">The configuration that runs exactly this setup, for the tool you launch with.</p>
      <div class="launch-formats" role="group" aria-label="Launch format">${formats.map((f) => `<button type="button" data-launch="${f}">${LABELS[f]}</button>`).join('')}</div>
      <div class="launch-files" data-testid="launch-files"></div>`
    : `<p class="hint">${why}</p>`;
  return `<section class="launch" data-testid="launch"><h2>Launch it</h2>${exported}${importHtml()}</section>`;
}

// "Check your own": where a launch config is pasted (launch_import.mjs reads it).
const importHtml = () => `<details class="launch-import" data-testid="launch-import">
  <summary>Check your own: paste a DeepSpeed, accelerate, axolotl or torchtune config, or a <code>tune run</code>, <code>vllm serve</code> or <code>llama-server</code> line</summary>
  <textarea id="gm-launch-paste" rows="6" spellcheck="false" aria-label="Your launch config"></textarea>
  <p><button type="button" data-launch-read>Read it</button></p>
  <div class="launch-import-out" data-testid="launch-import-out" aria-live="polite"></div>
</details>`;

async function fileText(file) {
  if (file.syntax !== 'yaml') return file.text;
  const { stringify } = await yaml();
  return stringify(file.content, { version: '1.1' });
}

// Shows `format`'s files for the view in `box` (the core's answer, or its refusal).
export async function showLaunch(client, view, format, box) {
  box.innerHTML = '<p class="hint">Writing…</p>';
  const [answer] = await client.run([{ ...launchRequest(view), format }]);
  if (!answer.ok) {
    box.innerHTML = `<p class="error">${escapeHtml(messageText(answer.error.message))}</p>`;
    return;
  }
  const r = answer.result;
  const blocks = [];
  for (const file of r.files) blocks.push({ title: file.name, text: await fileText(file) });
  if (r.command) blocks.push({ title: 'Launch command', text: r.command });
  box.innerHTML = blocks.map((b, i) => `<div class="launch-file"><div class="launch-head"><h3>${escapeHtml(b.title)}</h3>
      <button type="button" data-copy="${i}">Copy</button></div><pre><code>${escapeHtml(b.text)}</code></pre></div>`).join('')
    + (r.not_expressed.length ? `<ul class="notes">${r.not_expressed.map((g) => `<li>${escapeHtml(g.reason.charAt(0).toUpperCase() + g.reason.slice(1))}.</li>`).join('')}</ul>` : '');
  for (const button of box.querySelectorAll('[data-copy]')) {
    button.addEventListener('click', () => copyText(blocks[Number(button.dataset.copy)].text, button));
  }
  for (const button of box.parentElement.querySelectorAll('[data-launch]')) {
    button.setAttribute('aria-pressed', String(button.dataset.launch === format));
  }
}
