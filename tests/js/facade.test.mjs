// The ES-module facade over the wasm core, as pages and Node programs use it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { facadePath, readPresets } from './paths.mjs';

const { loadGpumem, GpumemError, API_VERSION } = await import(facadePath);
const gpumem = await loadGpumem();
const reference = readPresets();

test('params for a preset returns plain numbers', () => {
  const result = gpumem.params('meta-llama/Llama-2-7b-hf');
  assert.equal(result.total_params, 6738415616);
  assert.equal(typeof result.total_params, 'number');
  assert.equal(result.model.architecture, 'LlamaForCausalLM');
});

test('a pasted config.json gives the same counts as its preset', () => {
  for (const id of ['gpt2', 'mistralai/Mixtral-8x7B-v0.1', 'deepseek-ai/DeepSeek-V3']) {
    const byPreset = gpumem.params(id);
    const byConfig = gpumem.params({ config: reference[id].config });
    assert.equal(byConfig.total_params, byPreset.total_params, id);
    assert.equal(byConfig.active_params, byPreset.active_params, id);
  }
});

test('every reference model with a published count matches it', () => {
  for (const [id, entry] of Object.entries(reference)) {
    if (entry.published_params !== null) assert.equal(gpumem.params(id).total_params, entry.published_params, id);
  }
});

test('request() returns the whole envelope with warnings', () => {
  const config = { ...reference['meta-llama/Llama-3.2-1B'].config, model_type: 'my_arch' };
  const response = gpumem.request({ command: 'params', model: { config } });
  assert.equal(response.api_version, API_VERSION);
  assert.equal(response.ok, true);
  assert.equal(response.warnings.length, 1);
  assert.match(response.warnings[0], /my_arch/);
});

test('API errors become GpumemError with code and field', () => {
  const cases = [
    [() => gpumem.request('{"command":'), 'json.parse_error', ''],
    [() => gpumem.params('no/such-model'), 'model.unknown_preset', 'model'],
    [() => gpumem.params({ config: { model_type: 'llama', hidden_size: 0 } }), 'config.missing_keys', 'model.config'],
    [() => gpumem.params({ config: { ...reference.gpt2.config, n_embd: -3 } }), 'config.invalid_value', 'model.config.n_embd'],
    [() => gpumem.params({ config: { ...reference.gpt2.config, n_head: 7 } }), 'config.inconsistent_heads', 'model.config.n_head'],
    [() => gpumem.params({ config: { ...reference.gpt2.config, n_layer: 2.5 } }), 'config.invalid_value', 'model.config.n_layer'],
    [() => gpumem.params({ config: { ...reference.gpt2.config, vocab_size: 1e30 } }), 'config.invalid_value', 'model.config.vocab_size'],
    [() => gpumem.params({ config: { model_type: 'rwkv' } }), 'config.unsupported_model_type', 'model.config.model_type'],
    [() => gpumem.request({ command: 'fly' }), 'request.unknown_command', 'command'],
  ];
  for (const [run, code, field] of cases) {
    assert.throws(run, (error) => {
      assert.ok(error instanceof GpumemError);
      assert.ok(error instanceof Error);
      assert.equal(error.code, code);
      assert.equal(error.field, field);
      assert.ok(error.message.length > 0);
      return true;
    });
  }
});

test('the module survives a storm of bad input and still answers', () => {
  const junk = ['', 'null', '[]', '{}', '{"command":"params","model":{"config":[]}}', '\u0000',
    '{"command":"params","model":{"config":{"model_type":"opt","hidden_size":1e400}}}',
    JSON.stringify({ command: 'params', model: { config: { model_type: 'llama', hidden_size: 64, intermediate_size: 64, num_hidden_layers: 1e9, num_attention_heads: 1, vocab_size: 1 } } })];
  for (const text of junk) assert.throws(() => gpumem.request(text), GpumemError);
  assert.equal(gpumem.params('gpt2').total_params, 124439808);
});

test('models and gpus list the presets', () => {
  assert.equal(gpumem.models().length, Object.keys(reference).length);
  const gpus = gpumem.gpus();
  assert.ok(gpus.length >= 20);
  for (const gpu of gpus) assert.ok(Number.isInteger(gpu.memory_bytes) && gpu.memory_bytes > 0, gpu.id);
});

// The estimator's build (the page's first download) embeds the default model alone; the other
// presets come from catalogue.json beside it, which the facade reads under Node as it loads.
test('the estimator\'s build: one preset embedded, the catalogue beside it, the same answers', async () => {
  const estimator = await loadGpumem({ core: 'estimator' });
  const presets = readPresets();
  const catalogue = JSON.parse(readFileSync(facadePath.replace(/gpumem\.mjs$/, 'catalogue.json'), 'utf8'));
  assert.deepEqual(catalogue.presets.map((p) => p.id).sort(), Object.keys(presets).sort());
  for (const p of catalogue.presets) assert.ok(!('source' in p) && !('notes' in p), `${p.id} ships without its sources`);
  assert.deepEqual(estimator.models(), gpumem.models());
  for (const id of ['Qwen/Qwen3-8B', 'meta-llama/Llama-3.1-8B-Instruct', 'gpt2']) {
    assert.deepEqual(estimator.params(id), gpumem.params(id), id);
  }
  // A request as text is sent as it is: only the default model is in the module itself.
  const asText = (model) => estimator.respond(JSON.stringify({ api_version: 1, command: 'params', model }));
  assert.equal(asText('meta-llama/Llama-3.1-8B').ok, true);
  assert.equal(asText('meta-llama/Llama-3.1-8B-Instruct').ok, true);
  assert.equal(asText('Qwen/Qwen3-8B').error.code, 'model.unknown_preset');
  // A request with presets of its own keeps them.
  const own = { id: 'me/gpt2-copy', config: presets.gpt2.config };
  const answer = estimator.request({ command: 'params', model: 'me/gpt2-copy', presets: [own] }).result;
  assert.equal(answer.total_params, gpumem.params('gpt2').total_params);
  assert.equal(answer.model.id, 'me/gpt2-copy');
});

test('estimate and plan in LLMem mode through the facade', () => {
  const estimate = gpumem.estimate({
    mode: 'llmem', model: 'facebook/opt-1.3b', cluster: { gpu: 'v100-sxm2-16gb', gpus: 4 },
    parallel: { method: 'adp' }, workload: { micro_batch: 4, seq_len: 512 },
  });
  assert.equal(estimate.per_gpu.length, 1);
  assert.deepEqual(estimate.per_gpu[0].ranks, { first: 0, last: 3 });
  const components = Object.values(estimate.per_gpu[0].components);
  assert.equal(components.reduce((a, b) => a + b, 0), estimate.peak_bytes);
  const plan = gpumem.plan({ mode: 'llmem', model: 'facebook/opt-1.3b', cluster: { gpu: 'v100-sxm2-16gb', gpus: 4 } });
  assert.deepEqual(plan.candidates.map((c) => `${c.method}${c.tp}`), ['cdp1', 'adp1', 'tp4', 'dp_tp2']);
  assert.ok(plan.choice.tokens_per_s > 0);
  const detailed = gpumem.plan({ model: 'gpt2', cluster: { gpu: 't4', gpus: 2 } });
  assert.equal(detailed.mode, 'detailed');
  assert.ok(detailed.choice.max_micro_batch > 0);
  assert.throws(() => gpumem.plan({ mode: 'guess', model: 'gpt2', cluster: { gpu: 't4' } }),
    (e) => e.code === 'request.invalid_value' && e.field === 'mode');
});

test('inference through the facade: formats, KV cache, solved limits, bad input', () => {
  const base = { model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'rtx-4090' } };
  const estimate = (workload, extra = {}) =>
    gpumem.estimate({ ...base, ...extra, workload: { phase: 'inference', ...workload } });
  const bf16 = estimate({ seq_len: 1024, new_tokens: 128, micro_batch: 2 });
  assert.equal(bf16.workload.kv_cache.kind, 'dynamic');
  assert.equal(bf16.kv_cache.bytes_per_token, 131072);
  const sum = Object.values(bf16.per_gpu[0].components).reduce((a, b) => a + b, 0);
  assert.equal(sum, bf16.peak_bytes);
  // 4-bit weights take about a quarter of the 16-bit ones.
  const nf4 = estimate({ seq_len: 1024, new_tokens: 128, micro_batch: 2, weights: 'nf4' });
  assert.ok(nf4.weights_bytes < 0.4 * bf16.weights_bytes);
  // The solved context fits, one more token does not.
  const solved = estimate({ micro_batch: 4, new_tokens: 64 }, { solve: 'max_context' });
  const longest = solved.solution.max_context;
  assert.ok(longest > 1000);
  assert.equal(estimate({ micro_batch: 4, new_tokens: 64, seq_len: longest - 64 }).fits, true);
  assert.equal(estimate({ micro_batch: 4, new_tokens: 64, seq_len: longest - 63 }).fits, false);
  // vLLM reports the paged cache's capacity.
  const vllm = estimate({ framework: 'vllm', weights: 'awq_4bit', seq_len: 2000, new_tokens: 48 });
  assert.equal(vllm.workload.kv_cache.kind, 'paged');
  assert.equal(vllm.kv_cache.concurrent_sequences, Math.floor(vllm.kv_cache.capacity_tokens / 2048));
  // llama.cpp runs GGUF files; GGUF elsewhere is refused, naming the field.
  const gguf = estimate({ framework: 'llama_cpp', weights: 'gguf_q4_k_m', seq_len: 4096 });
  assert.ok(gguf.weights_bytes < nf4.weights_bytes * 1.2);
  const refused = [
    [{ weights: 'gguf_q4_k_m' }, 'workload.weights'],
    [{ weights: 'int3' }, 'workload.weights'],
    [{ kv_cache: { kind: 'paged' } }, 'workload.kv_cache.kind'],
    [{ kv_cache: { tokens: 10 }, seq_len: 100 }, 'workload.kv_cache.tokens'],
    [{ new_tokens: 0 }, 'workload.new_tokens'],
  ];
  for (const [workload, field] of refused) {
    assert.throws(() => estimate(workload), (e) => e instanceof GpumemError && e.field === field, field);
  }
  assert.throws(() => estimate({}, { solve: 'max_speed' }), (e) => e.field === 'solve');
});

test('an inference plan picks the fewest GPUs that serve the request', () => {
  const plan = gpumem.plan({
    model: 'meta-llama/Llama-3.1-70B', cluster: { gpu: 'h100-sxm', gpus: 8 },
    workload: { phase: 'inference', seq_len: 8192, new_tokens: 512 },
  });
  assert.equal(plan.choice.gpus, 2);
  assert.equal(plan.choice.method, 'tensor_parallel');
  assert.equal(plan.candidates[0].fits, false);
});

test('inference and offload requests with extreme or wrong values answer, never abort', () => {
  const base = { command: 'estimate', model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'h100-sxm' } };
  const inference = (workload, extra = {}) => ({ ...base, ...extra, workload: { phase: 'inference', ...workload } });
  const requests = [
    inference({ micro_batch: 1048576, seq_len: 134217728, new_tokens: 134217728 }),
    inference({ micro_batch: 1048576, seq_len: 100000, attention: 'eager' }, { solve: 'max_batch' }),
    inference({ micro_batch: 4096, new_tokens: 1 }, { solve: 'max_context' }),
    inference({ weights: 'gguf_q2_k', framework: 'llama_cpp', micro_batch: 4096, seq_len: 1000000 }),
    inference({ framework: 'vllm', kv_cache: { gpu_memory_utilization: 0.01, block_size: 1024 } }),
    inference({ kv_cache: { tokens: 134217728 }, seq_len: 1 }),
    inference({ group_size: 1, weights: 'gptq_4bit' }),
    inference({}, { parallel: { method: 'tensor_parallel' }, cluster: { gpu: 'h100-sxm', gpus: 65536 } }),
    inference({}, { parallel: { method: 'pipeline' }, cluster: { gpu: 'h100-sxm', gpus: 65536 } }),
    { ...base, parallel: { method: 'zero3', offload: { optimizer: 'nvme', params: 'nvme', activations: 'nvme' } },
      cluster: { gpu: 'h100-sxm', host_ram_bytes: 1, nvme_bytes: 1, nvme_read_bytes_per_s: 1e7 },
      workload: { micro_batch: 1048576, seq_len: 131072 } },
    { ...base, parallel: { method: 'zero3', offload: [] }, workload: { micro_batch: 1 } },
    { ...base, parallel: { method: 'single', offload: { optimizer: 'cpu' } }, workload: { micro_batch: 1 } },
    { ...base, workload: { micro_batch: 1048576, seq_len: 131072, finetune: 'lora', lora: { targets: ['all-linear'] },
      weights: 'nf4', framework: 'unsloth', grad_ckpt: true } },
    { ...base, workload: { micro_batch: 1, finetune: 'lora', framework: 'unsloth' } },
  ];
  for (const request of requests) {
    const text = JSON.stringify({ api_version: 1, ...request });
    let response;
    try {
      response = gpumem.request(text);
    } catch (error) {
      assert.ok(error instanceof GpumemError, `${text}: ${error}`);
      assert.ok(error.field !== undefined && error.message.length > 0);
      continue;
    }
    const r = response.result;
    for (const value of [r.peak_bytes, r.allocated_bytes, r.reserved_bytes]) {
      assert.ok(Number.isFinite(value) && value >= 0, text);
    }
  }
  assert.equal(gpumem.params('gpt2').total_params, 124439808);
});

test('validating malformed points through the facade skips them, never aborts', () => {
  const point = {
    id: 'p', kind: 'peak', metric: 'allocated', measured_gib: 10,
    model: { config: { model_type: 'llama', hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, vocab_size: 1000 } },
    workload: { phase: 'train', finetune: 'full', weights: 'bf16', compute: 'pure_bf16', optimizer: 'adamw', micro_batch: 1, seq_len: 64 },
    parallel: { method: 'single', gpus: 1 },
    gpu: { name: null, memory_gib: 80 },
    throughput: { tokens_per_s_per_gpu: 100 },
  };
  const malformed = [point, { ...point, gpu: 'x' }, { ...point, model: null },
    { ...point, parallel: { method: 'ddp', gpus: 'x', cpu_offload: 'x' } }, null, 3];
  const r = gpumem.request(JSON.stringify({ api_version: 1, command: 'validate', points: malformed })).result;
  assert.ok(Array.isArray(r.points));
  assert.equal(gpumem.params('gpt2').total_params, 124439808);
});
