// gpumem's JavaScript facade: loads the WebAssembly core (in browsers and in Node 20), sends
// requests of the JSON API (docs/api.md) and returns plain objects. Errors from the core become
// GpumemError, which carries the API's stable code and the request field it concerns.
// No estimation logic here: every number comes from the C++ core.

import createGpumemCore from './gpumem_core.mjs';
import createEstimatorCore from './gpumem_estimator.mjs';

export const API_VERSION = 1;

// The core's max_request_bytes (core/include/gpumem/api/json_api.hpp): a longer request is refused
// here, before it is copied into the module's memory (80 MB took it past its 2 GB heap).
const MAX_REQUEST_BYTES = 16 * 2 ** 20;

export class GpumemError extends Error {
  // `range` ({min, max} in the field's own unit) when a number is outside its range.
  constructor({ code, field, message, range }) {
    super(message);
    this.name = 'GpumemError';
    this.code = code;
    this.field = field;
    if (range) this.range = range;
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const inNode = typeof process !== 'undefined' && Boolean(process.versions?.node);

// The Emscripten loader fetches the .wasm by URL, which Node cannot do for a file path
// (toolchain.md Q3/Q4): read it from disk and hand it over.
async function readWasmInNode(file) {
  const { readFile } = await import('node:fs/promises');
  return readFile(new URL(`./${file}`, import.meta.url));
}

// The two builds of the core (wasm/CMakeLists.txt): the full module, and the estimator's, which
// answers params, estimate, plan, models, gpus and version alone in a smaller download.
const CORES = {
  full: { create: createGpumemCore, wasm: 'gpumem_core.wasm' },
  estimator: { create: createEstimatorCore, wasm: 'gpumem_estimator.wasm' },
};

// The estimator's build embeds only the page's default model; every preset is in catalogue.json,
// beside this file, in the API's `presets` format (core/CMakeLists.txt).
const CATALOGUE = 'catalogue.json';

async function readCatalogue() {
  if (inNode) {
    const { readFile } = await import('node:fs/promises');
    return JSON.parse(await readFile(new URL(`./${CATALOGUE}`, import.meta.url), 'utf8'));
  }
  const response = await fetch(new URL(CATALOGUE, import.meta.url));
  if (!response.ok) throw new Error(`${CATALOGUE}: HTTP ${response.status}`);
  return response.json();
}

// The preset a request's `model` names (a preset id, or {preset}), when it has no `presets` of its
// own.
function namedPreset(request) {
  if (request.presets !== undefined) return null;
  const model = request.model;
  if (typeof model === 'string') return model;
  return typeof model?.preset === 'string' ? model.preset : null;
}

class Gpumem {
  #core;
  #catalogue = null;  // {presets, byName: Map(id or alias -> preset)} once read
  #reading = null;

  constructor(core) {
    this.#core = core;
  }

  // Reads catalogue.json (the estimator's build, whose download embeds one model preset): from
  // then on a request naming a preset carries it (`presets`), and `models` lists them all.
  // Resolves to true when the catalogue is there; a failed read can be tried again.
  loadCatalogue() {
    this.#reading ??= readCatalogue().then((catalogue) => {
      const byName = new Map();
      for (const preset of catalogue.presets) {
        for (const name of [preset.id, ...(preset.aliases ?? [])]) if (!byName.has(name)) byName.set(name, preset);
      }
      this.#catalogue = { presets: catalogue.presets, byName };
      return true;
    }, () => {
      this.#reading = null;
      return false;
    });
    return this.#reading;
  }

  // The request with the presets it names from the catalogue (none before it is read).
  #withPresets(request) {
    if (!this.#catalogue) return request;
    if (request.command === 'models' && request.presets === undefined) {
      return { ...request, presets: this.#catalogue.presets };
    }
    const preset = this.#catalogue.byName.get(namedPreset(request));
    return preset ? { ...request, presets: [preset] } : request;
  }

  // Any API request (object or JSON text) -> the whole response {api_version, ok, command,
  // result, warnings}. `api_version` defaults to 1. Throws GpumemError when ok is false.
  request(request) {
    const response = this.respond(request);
    if (!response.ok) throw new GpumemError(response.error);
    return response;
  }

  // The whole response, whether the core answered or refused ({ok: false, error}): for callers
  // that handle both, like the page's worker.
  respond(request) {
    return JSON.parse(this.respondText(request));
  }

  // The response as the core wrote it (JSON text): what the regression corpus compares.
  respondText(request) {
    const text =
      typeof request === 'string' ? request : JSON.stringify({ api_version: API_VERSION, ...this.#withPresets(request) });
    if (text.length > MAX_REQUEST_BYTES) {
      return JSON.stringify({
        api_version: API_VERSION, ok: false,
        error: { code: 'request.too_large', field: '', message: `the request is ${text.length.toLocaleString('en-US')} characters; at most ${MAX_REQUEST_BYTES.toLocaleString('en-US')} bytes are accepted` },
      });
    }
    return this.#call(text);
  }

  // The core's gpumem_respond over the module's memory: the request's UTF-8 bytes copied in, the
  // answer's decoded out (binding.cpp).
  #call(text) {
    const core = this.#core;
    const bytes = encoder.encode(text);
    const at = core._malloc(Math.max(bytes.length, 1));
    core.HEAPU8.set(bytes, at);
    const answer = core._gpumem_respond(at, bytes.length);
    core._free(at);
    // (read HEAPU8 again: the call may have grown the memory, which replaces the view)
    return decoder.decode(core.HEAPU8.subarray(answer, answer + core._gpumem_response_size()));
  }

  // `model`: a preset id, {preset}, or {config: {...config.json...}}.
  params(model) {
    return this.request({ command: 'params', model }).result;
  }

  // Memory per GPU for one method. `request`: {mode, model, cluster, parallel, workload,
  // options} as in docs/api.md; returns the result object (per_gpu, peak_bytes, fits, ...).
  estimate(request) {
    return this.request({ ...request, command: 'estimate' }).result;
  }

  // Every method's largest fitting micro-batch and speed, and the choice.
  plan(request) {
    return this.request({ ...request, command: 'plan' }).result;
  }

  // Scores the estimators on validation points (../shared/validation/README.md format).
  validate(points) {
    return this.request({ command: 'validate', points }).result;
  }

  models() {
    return this.request({ command: 'models' }).result.models;
  }

  gpus() {
    return this.request({ command: 'gpus' }).result.gpus;
  }

  version() {
    return this.request({ command: 'version' }).result;
  }
}

// options.core: 'full' (default) or 'estimator' (export, import, validate and sources refused:
// the page's first download); options.wasmModule: the compiled WebAssembly.Module, if the caller
// compiled it (the page compiles it while its worker starts); options.wasmBinary: the module's bytes, if the
// caller has them; options.locateFile: where the browser should fetch the .wasm from (default:
// beside this file).
export async function loadGpumem(options = {}) {
  const core = CORES[options.core ?? 'full'];
  if (!core) throw new Error(`loadGpumem: core must be 'full' or 'estimator', got ${options.core}`);
  const moduleOptions = {};
  if (options.wasmModule) {
    // Emscripten's hook for instantiating a module of one's own: it returns the exports later.
    moduleOptions.instantiateWasm = (imports, receive) => {
      WebAssembly.instantiate(options.wasmModule, imports).then((instance) => receive(instance, options.wasmModule));
      return {};
    };
  } else if (options.wasmBinary) {
    moduleOptions.wasmBinary = options.wasmBinary;
  } else if (inNode) {
    moduleOptions.wasmBinary = await readWasmInNode(core.wasm);
  }
  if (options.locateFile) moduleOptions.locateFile = options.locateFile;
  const gpumem = new Gpumem(await core.create(moduleOptions));
  // Under Node the catalogue is a file beside this one: read at once, so that both builds answer
  // every preset. (A page reads it when a request first needs it: core_worker.mjs.)
  if (inNode && options.core === 'estimator') await gpumem.loadCatalogue();
  return gpumem;
}
