// Assembles the static site in dist/ (run by scripts/build.sh):
// - the page's sources (web/) and the ES modules hosts import (gpumem.mjs, the custom element), and
//   catalogue.json, the model presets the estimator's build does not embed;
// - calculator.js: the page (web/src/boot.mjs and what it imports) bundled by esbuild as one
//   classic script, so that the same files run from a static server and from file://, where
//   browsers refuse ES modules (toolchain.md Q12);
// - core.js: the estimator's wasm loader, the facade and the worker's handler
//   (web/src/core_worker.mjs) as one classic script, which the page runs in a Web Worker (or, from
//   file://, on the page); core_full.js: the full module's loader, which core.js loads the first
//   time a command needs the full module (the first visit does not download it);
// - wasm-inline.js: the .wasm as base64, loaded only from file://, where fetch() cannot read it;
// - methodology.html and llmem.html: docs/methodology.md and docs/llmem.md rendered by marked, each
//   heading with an anchor (the page links every component to its explanation);
// - sw.js: the service worker with the files a visit needs pre-cached and a version from the
//   contents of the site.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { build, transform } from 'esbuild';
import { Marked } from 'marked';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = `${root}dist/`;
const wasmDir = `${root}build/wasm/wasm/`;

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist);
const skipped = ['sw.template.js', 'boot.mjs', 'docs.template.html'];
cpSync(`${root}web/`, dist, { recursive: true, filter: (path) => !skipped.some((name) => path.endsWith(name)) });
for (const file of ['gpumem.mjs', 'gpumem_core.mjs', 'gpumem_core.wasm', 'gpumem_estimator.mjs', 'gpumem_estimator.wasm', 'catalogue.json']) cpSync(`${wasmDir}${file}`, `${dist}${file}`);

// Browsers of the last three years (module workers aside: the worker is a classic script).
const common = { bundle: true, format: 'iife', minify: true, target: ['chrome100', 'firefox100', 'safari15'], logLevel: 'warning' };
await build({ ...common, entryPoints: [`${root}web/src/boot.mjs`], outfile: `${dist}calculator.js` });
// The loaders find their .wasm beside the script that runs them; Node's file reading is never
// bundled.
const coreScript = { ...common, define: { 'import.meta.url': 'self.location.href' }, external: ['node:*'] };
// In core.js the facade's import of the full module's loader is a stand-in that loads
// core_full.js the first time it is called: importScripts in the worker, a script element on a
// page (file://), both beside core.js.
const fullCoreLater = {
  name: 'full-core-later',
  setup(b) {
    b.onResolve({ filter: /gpumem_core\.mjs$/ }, () => ({ path: 'full-core-later', namespace: 'gpumem' }));
    b.onLoad({ filter: /.*/, namespace: 'gpumem' }, () => ({
      contents: `export default async function createGpumemCore(options) {
  if (!self.gpumemFullCore) {
    if (typeof importScripts === 'function') {
      importScripts('core_full.js');
    } else {
      await new Promise((resolve, reject) => {
        const script = document.createElement('script');
        script.src = 'core_full.js';
        script.onload = resolve;
        script.onerror = () => reject(new Error('core_full.js could not be loaded'));
        document.head.append(script);
      });
    }
  }
  return self.gpumemFullCore(options);
}`,
    }));
  },
};
await build({
  ...coreScript,
  stdin: {
    contents: `import { loadGpumem } from './gpumem.mjs';\nimport { serveCore } from ${JSON.stringify(`${root}web/src/core_worker.mjs`)};\nserveCore(loadGpumem);\n`,
    resolveDir: wasmDir,
    sourcefile: 'core.js',
  },
  plugins: [fullCoreLater],
  outfile: `${dist}core.js`,
});
await build({
  ...coreScript,
  stdin: { contents: "import createGpumemCore from './gpumem_core.mjs';\nself.gpumemFullCore = createGpumemCore;\n", resolveDir: wasmDir, sourcefile: 'core_full.js' },
  outfile: `${dist}core_full.js`,
});
// The page's parts that run on a click, classic scripts loaded the first time (web/src/classic_scripts.mjs):
// the reader of a pasted launch file, the Hub's config.json fetch and the "Which GPU?" table.
for (const [file, module, names, global] of [
  ['launch_import.js', 'launch_import.mjs', 'readPasted', 'gpumemLaunchImport'],
  ['hub.js', 'hub.mjs', 'hubConfig', 'gpumemHub'],
  ['compare.js', 'compare_table.mjs', 'compareTable', 'gpumemCompare'],
]) {
  await build({
    ...common,
    stdin: {
      contents: `import { ${names} } from ${JSON.stringify(`${root}web/src/${module}`)};\nglobalThis.${global} = { ${names} };\n`,
      resolveDir: root,
      sourcefile: file,
    },
    outfile: `${dist}${file}`,
  });
}
// npm's yaml for the page's launch files, a classic script loaded only when one is shown
// (web/src/classic_scripts.mjs).
await build({
  ...common,
  stdin: { contents: "import { parse, stringify } from 'yaml';\nglobalThis.gpumemYaml = { parse, stringify };\n", resolveDir: root, sourcefile: 'yaml.js' },
  outfile: `${dist}yaml.js`,
});
// The styles minified (the page's first visit counts every byte: bench/page_bench.mjs).
writeFileSync(`${dist}style.css`, (await transform(readFileSync(`${root}web/style.css`, 'utf8'), { loader: 'css', minify: true })).code);
writeFileSync(`${dist}wasm-inline.js`, `globalThis.GPUMEM_WASM_BASE64 = '${readFileSync(`${wasmDir}gpumem_core.wasm`).toString('base64')}';\n`);

// The documents, with an anchor on every heading (GitHub's style of slug, numbered on a repeat).
function renderDoc(markdown, title) {
  const seen = new Map();
  const marked = new Marked({
    renderer: {
      heading({ tokens, depth }) {
        const html = this.parser.parseInline(tokens);
        const base = html.replace(/<[^>]+>/g, '').toLowerCase().replace(/&[a-z#0-9]+;/g, '')
          .replace(/[^\w\- ]/g, '').trim().replace(/ /g, '-');
        const n = seen.get(base) ?? 0;
        seen.set(base, n + 1);
        const id = n ? `${base}-${n}` : base;
        return `<h${depth} id="${id}"><a href="#${id}">${html}</a></h${depth}>\n`;
      },
    },
  });
  const body = marked.parse(markdown).replace(/href="(?:docs\/)?(methodology|llmem|api)\.md/g, 'href="$1.html');
  return readFileSync(`${root}web/docs.template.html`, 'utf8').replace('__TITLE__', title).replace('__BODY__', body);
}
for (const [doc, title] of [['methodology', 'How gpumem computes memory'], ['llmem', 'LLMem mode and the planner'], ['api', 'The gpumem JSON API']]) {
  writeFileSync(`${dist}${doc}.html`, renderDoc(readFileSync(`${root}docs/${doc}.md`, 'utf8'), title));
}

// The service worker: everything a visit over HTTP loads, versioned by the whole site's content;
// the documents are cached when first read.
const files = [];
(function walk(dir, prefix) {
  for (const name of readdirSync(dir).sort()) {
    const path = `${dir}${name}`;
    if (statSync(path).isDirectory()) walk(`${path}/`, `${prefix}${name}/`);
    else if (name !== 'sw.js') files.push(`${prefix}${name}`);
  }
})(dist, '');
const hash = createHash('sha256');
for (const f of files) hash.update(f).update(readFileSync(`${dist}${f}`));
// (The ES modules are for host pages that embed the custom element from this site; they do not
// run under its service worker.)
const precached = files.filter((f) => !f.endsWith('.html') || ['index.html', 'embed.html'].includes(f))
  .filter((f) => f !== 'wasm-inline.js' && !f.endsWith('.mjs'));
const template = readFileSync(`${root}web/sw.template.js`, 'utf8');
writeFileSync(`${dist}sw.js`, template
  .replace("'__VERSION__'", JSON.stringify(hash.digest('hex').slice(0, 16)))
  .replace("['__FILES__']", JSON.stringify(['./', ...precached])));
console.log(`dist/ assembled at ${dist} (${precached.length} files pre-cached)`);
