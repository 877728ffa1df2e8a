// The regression corpus (tests/regression/): its requests (and the validation files, as validate
// requests), answered through the wasm facade, each reduced to a digest of the answer's text.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';

export function corpusRequests(root) {
  const corpus = JSON.parse(readFileSync(`${root}tests/regression/requests.json`, 'utf8'));
  const out = corpus.requests.map((r) => ({ name: r.name, text: JSON.stringify(r.request) }));
  for (const file of corpus.validate_files) {
    if (!existsSync(`${root}${file}`)) continue;  // ../shared beside the checkout only
    const points = readFileSync(`${root}${file}`, 'utf8');
    out.push({ name: `validate ${file}`, text: `{"command":"validate","points":${points}}` });
  }
  return out;
}

export const digest = (text) => createHash('sha256').update(text).digest('hex').slice(0, 16);

export async function answerDigests(root, gpumem) {
  const out = {};
  for (const { name, text } of corpusRequests(root)) out[name] = digest(gpumem.respondText(text));
  return out;
}
