// The native command line, as users call it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliPath, readPresets } from './paths.mjs';

const reference = readPresets();
const gpumem = (args, input) => spawnSync(cliPath, args, { encoding: 'utf8', input });
const scratch = mkdtempSync(join(tmpdir(), 'gpumem-cli-'));

test('params --json reports Llama-2-7b exactly', () => {
  const run = gpumem(['params', '--model', 'meta-llama/Llama-2-7b-hf', '--json']);
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout);
  assert.equal(out.total_params, 6738415616);
  assert.equal(out.active_params, 6738415616);
  assert.equal(out.groups.attention, 32 * 4 * 4096 * 4096);
});

test('params reads a config.json path and prints a table', () => {
  const path = join(scratch, 'config.json');
  writeFileSync(path, JSON.stringify(reference['mistralai/Mixtral-8x7B-v0.1'].config));
  const run = gpumem(['params', '--model', path]);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /MixtralForCausalLM/);
  assert.match(run.stdout, /total\s+46,702,792,704/);
  assert.match(run.stdout, /active per token\s+12,879,925,248/);
});

test('models and gpus list the presets, as tables and as JSON', () => {
  const models = gpumem(['models', '--json']);
  assert.equal(models.status, 0);
  assert.equal(JSON.parse(models.stdout).models.length, Object.keys(reference).length);
  assert.match(gpumem(['models']).stdout, /meta-llama\/Llama-3\.1-405B\s+Llama\s+llama\s+405,853,388,800/);
  const gpus = JSON.parse(gpumem(['gpus', '--json']).stdout).gpus;
  assert.ok(gpus.some((g) => g.id === 'h100-sxm'));
  assert.match(gpumem(['gpus']).stdout, /a100-sxm4-80gb/);
  // Where they come from: a command of its own.
  const sources = JSON.parse(gpumem(['sources', '--json']).stdout);
  assert.equal(sources.models.length, Object.keys(reference).length);
  assert.equal(sources.gpus.length, gpus.length);
  assert.match(gpumem(['sources']).stdout, /^meta-llama\/Llama-2-7b-hf\n {2}\S/m);
});

test('run answers a request from stdin and from a file', () => {
  const request = JSON.stringify({ api_version: 1, command: 'params', model: 'gpt2' });
  const fromStdin = gpumem(['run', '--request', '-'], request);
  assert.equal(fromStdin.status, 0);
  assert.equal(JSON.parse(fromStdin.stdout).result.total_params, 124439808);
  const path = join(scratch, 'request.json');
  writeFileSync(path, request);
  assert.equal(JSON.parse(gpumem(['run', '--request', path]).stdout).ok, true);
});

test('bad input exits 2 with a message', () => {
  const cases = [
    [['params', '--model', 'no/such-model'], /not a model preset/],
    [['params'], /needs --model/],
    [['frobnicate'], /unknown command/],
    [['params', '--model'], /needs a value/],
    [['run', '--request', join(scratch, 'missing.json')], /cannot read/],
    [[], /Usage/],
  ];
  for (const [args, message] of cases) {
    const run = gpumem(args);
    assert.equal(run.status, 2, args.join(' '));
    assert.match(run.stderr + run.stdout, message);
  }
  const bad = gpumem(['run', '--request', '-'], '{"command": "params", "model": {"config": {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 5, "vocab_size": 10}}}');
  assert.equal(bad.status, 2);
  assert.equal(JSON.parse(bad.stdout).error.code, 'config.inconsistent_heads');
  const broken = join(scratch, 'broken.json');
  writeFileSync(broken, '{"model_type": ');
  assert.equal(gpumem(['params', '--model', broken]).status, 2);
});

test('--help and --version', () => {
  assert.match(gpumem(['--help']).stdout, /gpumem params/);
  assert.match(gpumem(['--version']).stdout, /api_version 1/);
});

test('estimate and plan on the command line', () => {
  const estimate = gpumem(['estimate', '--model', 'facebook/opt-1.3b', '--mode', 'llmem', '--gpus', '1',
    '--method', 'single', '--micro-batch', '4', '--seq-len', '512', '--gpu', 'v100-sxm2-16gb', '--json']);
  assert.equal(estimate.status, 0, estimate.stderr);
  const out = JSON.parse(estimate.stdout);
  const c = out.per_gpu[0].components;
  // The design doc's worked example: 10616 + 198 + 2 + 208 + 590 MiB besides m_init.
  assert.equal(c.optimizer_states + c.lm_head_weight + c.input + c.activations + c.logits_and_loss, 11614 * 2 ** 20);
  const plan = gpumem(['plan', '--model', 'facebook/opt-6.7b', '--gpus', '8', '--gpu', 'a100-sxm4-40gb', '--mode', 'llmem', '--json']);
  assert.equal(plan.status, 0, plan.stderr);
  const parsed = JSON.parse(plan.stdout);
  assert.ok(parsed.choice && parsed.candidates.length === 5);
  for (const key of ['method', 'tp', 'max_micro_batch', 'peak_bytes', 'tokens_per_s', 'fits']) {
    assert.ok(key in parsed.candidates[0], key);
  }
  const table = gpumem(['plan', '--model', 'facebook/opt-1.3b', '--gpus', '2', '--gpu', 't4', '--mode', 'llmem']);
  assert.match(table.stdout, /fastest method that fits|Nothing fits/);
  const bad = gpumem(['estimate', '--model', 'facebook/opt-1.3b', '--mode', 'llmem', '--gpus', '4', '--method', 'dp_tp', '--tp', '3', '--micro-batch', '1']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /parallel\.tp/);
});

test('validate scores the step-time model on throughput points', () => {
  const points = join(scratch, 'points.json');
  writeFileSync(points, JSON.stringify([{
    id: 'x', model: { config: reference['meta-llama/Llama-2-7b-hf'].config },
    workload: { phase: 'train', finetune: 'full', compute: 'amp_bf16', micro_batch: 2, seq_len: 4096, grad_ckpt: false, attention: 'flash' },
    parallel: { method: 'fsdp_full_shard', gpus: 8, cpu_offload: false, tp: null },
    gpu: { name: 'NVIDIA A100 80GB', memory_gib: 80 },
    throughput: { tokens_per_s_per_gpu: 3000, tflops_per_gpu: null, step_time_s: null },
  }]));
  const run = gpumem(['validate', points, '--json']);
  assert.equal(run.status, 0, run.stderr);
  const report = JSON.parse(run.stdout).step_time;
  assert.equal(report.summary.n, 1);
  assert.equal(report.points[0].scored, true);
  assert.ok(Math.abs(report.points[0].relative_error) < 1);
});

test('a detailed estimate on one GPU, by component, in each metric', () => {
  const base = ['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '4', '--seq-len', '512',
    '--gpu', 'h100-sxm', '--json'];
  const read = (extra) => {
    const run = gpumem([...base, ...extra]);
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout);
  };
  const used = read([]);
  const allocated = read(['--metric', 'allocated']);
  const reserved = read(['--metric', 'reserved']);
  assert.equal(used.mode, 'detailed');
  assert.ok(allocated.peak_bytes <= reserved.peak_bytes && reserved.peak_bytes < used.peak_bytes);
  for (const r of [used, allocated, reserved]) {
    const sum = Object.values(r.per_gpu[0].components).reduce((a, b) => a + b, 0);
    assert.equal(sum, r.peak_bytes);
  }
  const lora = read(['--finetune', 'lora', '--lora-r', '8', '--lora-targets', 'q_proj,v_proj']);
  assert.equal(lora.trainable_params, 16 * (8 * 2048 + 2048 * 8 + 8 * 2048 + 512 * 8));
  assert.ok(lora.peak_bytes < used.peak_bytes);
  // DoRA: the same adapters plus one magnitude per output feature of q_proj and v_proj.
  const dora = read(['--finetune', 'dora', '--lora-r', '8', '--lora-targets', 'q_proj,v_proj']);
  assert.equal(dora.workload.finetune, 'dora');
  assert.equal(dora.trainable_params - lora.trainable_params, 16 * (2048 + 512));
  assert.ok(dora.peak_bytes > lora.peak_bytes);
  // PEFT's LoRA on the embedding (r x (vocab + dim)) and a trained copy of the (tied) LM head.
  const embedding = read(['--finetune', 'lora', '--lora-targets', 'q_proj,v_proj,embed_tokens']);
  assert.equal(embedding.trainable_params - lora.trainable_params, 8 * (128256 + 2048));
  const saved = read(['--finetune', 'lora', '--lora-targets', 'q_proj,v_proj', '--modules-to-save', 'lm_head']);
  assert.equal(saved.trainable_params - lora.trainable_params, 128256 * 2048);
  const unknown = gpumem([...base, '--finetune', 'lora', '--modules-to-save', 'norm']);
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /workload\.lora\.modules_to_save/);
  const bad = gpumem([...base, '--compute', 'fp8']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /workload\.compute/);
});

test('library releases on the command line: --torch-version, --bitsandbytes-version, --peft-version', () => {
  const base = ['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '2', '--seq-len', '512',
    '--gpu', 'h100-sxm', '--json'];
  const read = (extra) => {
    const run = gpumem([...base, ...extra]);
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout);
  };
  // torch 1.x: eager attention by default, the gradients kept from step to step.
  const torch1 = read(['--torch-version', '1.13.1']);
  assert.equal(torch1.workload.attention, 'eager');
  assert.match(torch1.notes.join(' '), /zero_grad keeps the gradients/);
  const qlora = ['--finetune', 'lora', '--weights', 'nf4'];
  const before = read(qlora);
  const after = read([...qlora, '--bitsandbytes-version', '0.45.0']);
  assert.ok(after.peak_bytes < before.peak_bytes);
  assert.match(before.notes.join(' '), /as bitsandbytes before 0\.45 does/);
  const lora = read(['--finetune', 'lora']);
  const peft11 = read(['--finetune', 'lora', '--peft-version', '0.11.1']);
  assert.equal(peft11.trainable_params, lora.trainable_params);
  assert.ok(peft11.peak_bytes < lora.peak_bytes);
  const bad = gpumem([...base, '--torch-version', 'nightly']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /workload\.software\.torch/);
});

test('litgpt LLaMA-Adapter on the command line', () => {
  const base = ['estimate', '--model', 'meta-llama/Llama-2-7b-hf', '--micro-batch', '1', '--seq-len', '1304',
    '--compute', 'pure_bf16', '--metric', 'allocated', '--json'];
  const r = gpumem([...base, '--finetune', 'llama_adapter_v1', '--framework', 'litgpt']);
  assert.equal(r.status, 0, r.stderr);
  const v1 = JSON.parse(r.stdout);
  assert.equal(v1.workload.finetune, 'llama_adapter_v1');
  assert.equal(v1.trainable_params, 1229760);  // litgpt's count for Llama-2-7B
  const wrong = gpumem([...base, '--finetune', 'llama_adapter_v2']);
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /workload\.finetune.*litgpt/);
});

test('a T5 config.json on the command line: --target-len, its notes, and a plan', () => {
  const path = join(scratch, 't5.json');
  writeFileSync(path, JSON.stringify({
    model_type: 't5', is_encoder_decoder: true, d_model: 512, d_kv: 64, num_heads: 8, d_ff: 2048,
    num_layers: 6, vocab_size: 32128, feed_forward_proj: 'relu', tie_word_embeddings: true,
  }));
  const table = gpumem(['estimate', '--model', path, '--micro-batch', '8', '--seq-len', '512', '--target-len', '64']);
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, /sequence 512, target 64/);
  assert.match(table.stdout, /note: T5's attention computes its scores by hand/);
  const longer = gpumem(['estimate', '--model', path, '--micro-batch', '8', '--seq-len', '512', '--json']);
  const shorter = gpumem(['estimate', '--model', path, '--micro-batch', '8', '--seq-len', '512',
    '--target-len', '64', '--json']);
  assert.equal(JSON.parse(longer.stdout).workload.target_len, 512);  // seq-len by default
  assert.ok(JSON.parse(shorter.stdout).peak_bytes < JSON.parse(longer.stdout).peak_bytes);
  const plan = gpumem(['plan', '--model', path, '--gpus', '2', '--seq-len', '512', '--target-len', '64', '--json']);
  assert.equal(plan.status, 0, plan.stderr);
  assert.equal(JSON.parse(plan.stdout).workload.target_len, 64);
  const decoderOnly = gpumem(['estimate', '--model', 'gpt2', '--micro-batch', '1', '--target-len', '64']);
  assert.equal(decoderOnly.status, 2);
  assert.match(decoderOnly.stderr, /workload\.target_len/);
});

test('detailed estimates under data parallelism shard what each method shards', () => {
  const run = (method, gpus) => {
    const r = gpumem(['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '2', '--seq-len', '512',
      '--gpu', 'a100-sxm4-80gb', '--gpus', String(gpus), '--method', method, '--metric', 'allocated', '--json']);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  const single = run('single', 1);
  const ddp = run('ddp', 4);
  const zero3 = run('zero3', 4);
  const fsdp = run('fsdp_full_shard', 8);
  assert.ok(ddp.peak_bytes > single.peak_bytes);  // DDP's gradient buckets
  assert.ok(zero3.peak_bytes < single.peak_bytes);
  assert.ok(fsdp.peak_bytes < zero3.peak_bytes);
  assert.deepEqual(zero3.per_gpu[0].ranks, { first: 0, last: 3 });
  // HYBRID_SHARD over 2 nodes of 4: sharded like FULL_SHARD within one node.
  const hybrid = gpumem(['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '2', '--seq-len', '512',
    '--gpu', 'a100-sxm4-80gb', '--gpus', '8', '--gpus-per-node', '4', '--method', 'fsdp_hybrid_shard',
    '--metric', 'allocated', '--json']);
  assert.equal(hybrid.status, 0, hybrid.stderr);
  const fsdp4 = run('fsdp_full_shard', 4);
  assert.equal(JSON.parse(hybrid.stdout).peak_bytes, fsdp4.peak_bytes);
  assert.equal(JSON.parse(hybrid.stdout).parallel.shard_group, 4);
  const oneNode = gpumem(['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '2', '--gpus', '4',
    '--method', 'fsdp_hybrid_shard']);
  assert.equal(oneNode.status, 2);
  assert.match(oneNode.stderr, /gpus_per_node/);
  const bad = gpumem(['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '2', '--gpus', '4',
    '--method', 'single']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /parallel\.method/);
  // DeepSpeed's reduce bucket (default 5e8 bf16 elements) is held from the start; a smaller one
  // lowers the peak by the difference, and the result says which values it used.
  const small = gpumem(['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '2', '--seq-len', '512',
    '--gpu', 'a100-sxm4-80gb', '--gpus', '4', '--method', 'zero3', '--metric', 'allocated',
    '--reduce-bucket-size', '1000000', '--json']);
  assert.equal(small.status, 0, small.stderr);
  const smallBucket = JSON.parse(small.stdout);
  assert.equal(zero3.parallel.deepspeed.reduce_bucket_size, 5e8);
  assert.equal(smallBucket.parallel.deepspeed.reduce_bucket_size, 1e6);
  // (within the caching allocator's 2 MiB rounding of a large block)
  assert.ok(Math.abs(zero3.peak_bytes - smallBucket.peak_bytes - (5e8 - 1e6) * 2) < 2 ** 21);
  const misplaced = gpumem(['estimate', '--model', 'meta-llama/Llama-3.2-1B', '--micro-batch', '2', '--gpus', '4',
    '--method', 'ddp', '--reduce-bucket-size', '1000000']);
  assert.equal(misplaced.status, 2);
  assert.match(misplaced.stderr, /parallel\.deepspeed/);
});

test('detailed estimates under tensor (and sequence), pipeline and DP+TP parallelism', () => {
  const base = ['estimate', '--model', 'meta-llama/Llama-3.1-8B', '--micro-batch', '2', '--seq-len', '4096',
    '--gpu', 'h100-sxm', '--metric', 'allocated', '--json'];
  const run = (extra) => {
    const r = gpumem([...base, ...extra]);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  const single = run([]);
  const tp = run(['--gpus', '4', '--method', 'tensor_parallel']);
  const sp = run(['--gpus', '4', '--method', 'tensor_parallel', '--sequence-parallel']);
  assert.deepEqual([tp.parallel.tp, tp.parallel.dp, sp.parallel.sequence_parallel], [4, 1, true]);
  const weights = (r) => r.per_gpu[0].components.weights;
  assert.ok(Math.abs(weights(tp) / weights(single) - 0.25) < 0.01);  // norms stay whole
  // activations dominate at this length: SP splits the hidden-width ones too
  assert.ok(sp.peak_bytes < tp.peak_bytes && tp.peak_bytes < single.peak_bytes);
  const bad = gpumem([...base, '--gpus', '16', '--method', 'tensor_parallel']);  // 8 KV heads
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /parallel\.tp/);
  // Pipeline: one entry per stage; the first holds the most micro-batches in flight (1F1B).
  const pp = run(['--gpus', '4', '--method', 'pipeline']);
  assert.deepEqual(pp.per_gpu.map((r) => r.ranks.first), [0, 1, 2, 3]);
  assert.deepEqual([pp.parallel.pp, pp.parallel.micro_batches], [4, 4]);
  assert.equal(pp.peak_bytes, Math.max(...pp.per_gpu.map((r) => r.peak_bytes)));
  assert.ok(pp.per_gpu[1].peak_bytes > pp.per_gpu[2].peak_bytes);
  const fewer = run(['--gpus', '4', '--method', 'pipeline', '--micro-batches', '2']);
  assert.ok(fewer.per_gpu[0].peak_bytes < pp.per_gpu[0].peak_bytes);
  // 3D: 2 stages of 2 tensor-parallel GPUs, replicated twice with ZeRO-1.
  const threeD = run(['--gpus', '8', '--method', 'pipeline', '--pp', '2', '--tp', '2', '--dp-method', 'zero1']);
  assert.deepEqual([threeD.parallel.pp, threeD.parallel.tp, threeD.parallel.dp], [2, 2, 2]);
  assert.deepEqual(threeD.per_gpu.map((r) => r.ranks), [{ first: 0, last: 3 }, { first: 4, last: 7 }]);
  // DP+TP: ZeRO-1 over 4 data-parallel groups of 2 tensor-parallel GPUs.
  const hybrid = run(['--gpus', '8', '--method', 'zero1', '--tp', '2']);
  assert.deepEqual([hybrid.parallel.dp, hybrid.parallel.tp], [4, 2]);
  // DeepSpeed keeps a bf16 module (half the single GPU's fp32 bytes), split over 2 TP GPUs.
  assert.ok(Math.abs(weights(hybrid) / weights(single) - 0.25) < 0.01);
  const badTp = gpumem([...base, '--gpus', '8', '--method', 'zero1', '--tp', '3']);
  assert.equal(badTp.status, 2);
  assert.match(badTp.stderr, /parallel\.tp/);
  // FSDP accumulating gradients (no_sync) keeps them unsharded; litgpt's LoRA blocks mix frozen
  // and trainable tensors in one flat parameter (litgpt resource tables: 20.66 GiB measured).
  const litgpt = (ga) => run(['--gpus', '2', '--method', 'fsdp_full_shard', '--finetune', 'lora',
    '--weights', 'bf16', '--compute', 'pure_bf16', '--grad-ckpt', '--framework', 'litgpt',
    '--model', 'meta-llama/Llama-2-7b-hf', '--micro-batch', '1', '--seq-len', '1304',
    '--gpu', 'a100-sxm4-40gb', '--grad-accumulation', String(ga)]);
  assert.ok(litgpt(64).peak_bytes > litgpt(1).peak_bytes * 1.3);
  // --framework reaches the core: litgpt keeps its fp32 logits through backward, transformers not.
  const lora = (framework) => run(['--finetune', 'lora', '--framework', framework]).peak_bytes;
  assert.notEqual(lora('litgpt'), lora('transformers'));
  const spWithDdp = gpumem([...base, '--gpus', '4', '--method', 'ddp', '--sequence-parallel']);
  assert.equal(spWithDdp.status, 2);
  assert.match(spWithDdp.stderr, /parallel\.sequence_parallel/);
});

test('inference on the command line: components, KV cache, solved context, plan', () => {
  const run = gpumem(['estimate', '--model', 'meta-llama/Llama-3.1-8B', '--gpu', 'rtx-4090', '--phase', 'inference',
    '--seq-len', '4096', '--new-tokens', '256', '--micro-batch', '4', '--solve', 'max_context']);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /kv_cache\s+\d/);
  assert.match(run.stdout, /KV cache: [\d.]+ GiB, 131,072 bytes per token/);
  assert.match(run.stdout, /max_context: \d+ \(limited by memory\)/);
  const vllm = gpumem(['estimate', '--model', 'meta-llama/Llama-3.1-8B', '--gpu', 'rtx-4090', '--phase', 'inference',
    '--framework', 'vllm', '--weights', 'awq_4bit', '--gpu-memory-utilization', '0.85', '--json']);
  assert.equal(vllm.status, 0, vllm.stderr);
  assert.equal(JSON.parse(vllm.stdout).kv_cache.gpu_memory_utilization, 0.85);
  const plan = gpumem(['plan', '--model', 'meta-llama/Llama-3.1-70B', '--gpu', 'h100-sxm', '--gpus', '8',
    '--phase', 'inference', '--seq-len', '8192']);
  assert.equal(plan.status, 0, plan.stderr);
  assert.match(plan.stdout, /tensor_parallel\s+2\s+yes/);
  const bad = gpumem(['estimate', '--model', 'meta-llama/Llama-3.1-8B', '--phase', 'inference', '--kv-dtype', 'fp4']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /workload\.kv_cache\.dtype/);
});

test('the page\'s "copy CLI command" gives the same answer as its JSON request', async () => {
  const { requestFor, cliFor, stateFromQuery } = await import('../../web/src/state.mjs');
  const queries = ['?v=1', '?v=1&gpus=4&gpu=a100-sxm4-80gb&ft=full&opt=adafactor',
    '?v=1&method=zero3&gpus=2&mb=2&seq=2048&ft=qlora&r=8&targets=q_proj,v_proj',
    '?v=1&method=ddp&gpus=2&ft=lora_int8&targets=q_proj,v_proj',
    '?v=1&method=single&targets=q_proj,v_proj&save=lm_head,embed_tokens',
    '?v=1&method=single&ft=ia3',
    '?v=1&method=single&ft=full&precision=pure_bf16&mb=4&loop=own_loss_kept',
    '?v=1&method=single&mb=4&loop=outputs',
    '?v=1&method=single&ft=qlora&ckpt=0&bnb=0.45.1',
    '?v=1&method=single&attn=eager&torch=1.13.1&peft=0.11.1',
    '?v=1&method=single&ldrop=0.05&targets=q_proj,v_proj',
    '?v=1&phase=inference&weights=awq_4bit&fw=vllm&mb=4&seq=2000&new=100',
    '?v=1&phase=inference&method=single&weights=nf4&mb=2&seq=4096&new=256&kvdtype=fp8',
    '?v=1&mode=llmem&model=facebook%2Fopt-1.3b&gpus=2&gpu=v100-sxm2-16gb',
    '?v=1&ft=full&method=zero3&oopt=cpu&oparams=cpu&oact=nvme&ram=64&disk=500',
    '?v=1&model=meta-llama%2FLlama-3.1-70B&ft=full&ram=128&disk=1862'];
  for (const query of queries) {
    const request = requestFor(stateFromQuery(query), stateFromQuery(query).model);
    const byRequest = gpumem(['run', '--request', '-'], JSON.stringify(request));
    assert.equal(byRequest.status, 0, `${query}: ${byRequest.stdout}`);
    const words = cliFor(request).split(' ').slice(1);
    const byCli = gpumem([...words, '--json']);
    assert.equal(byCli.status, 0, `${query}: ${cliFor(request)}\n${byCli.stderr}`);
    const a = JSON.parse(byRequest.stdout).result;
    const b = JSON.parse(byCli.stdout);
    const peak = (r) => (r.choice ? r.choice.peak_bytes : r.peak_bytes);
    assert.equal(peak(b), peak(a), `${query}: ${cliFor(request)}`);
  }
});

// The launch files, written by `export --write` and parsed back with the libraries their users'
// tools read them with (JSON, YAML via npm's yaml): the documented keys of each project.
test('export writes launch files their tools parse, with the documented keys', async () => {
  const { parse } = await import('yaml');
  const dir = mkdtempSync(join(tmpdir(), 'gpumem-export-'));
  const setup = ['--model', 'meta-llama/Llama-3.1-8B', '--gpu', 'a100-sxm4-80gb', '--gpus', '16',
    '--gpus-per-node', '8', '--method', 'zero3', '--offload-optimizer', 'nvme', '--offload-params', 'nvme',
    '--micro-batch', '2', '--seq-len', '2048', '--grad-accumulation', '8'];
  const ds = gpumem(['export', '--format', 'deepspeed', ...setup, '--write', dir]);
  assert.equal(ds.status, 0, ds.stderr);
  assert.match(ds.stdout, /deepspeed --num_gpus 8 --num_nodes 2 --hostfile hostfile train\.py --deepspeed ds_config\.json/);
  const config = JSON.parse(readFileSync(join(dir, 'ds_config.json'), 'utf8'));
  // deepspeed/runtime/config.py and zero/config.py (DeepSpeed 0.16): the keys DeepSpeed reads.
  const dsKeys = new Set(['train_batch_size', 'train_micro_batch_size_per_gpu', 'gradient_accumulation_steps',
    'bf16', 'fp16', 'zero_optimization', 'optimizer']);
  for (const key of Object.keys(config)) assert.ok(dsKeys.has(key), key);
  assert.equal(config.train_batch_size, 2 * 8 * 16);
  const zeroKeys = new Set(['stage', 'reduce_bucket_size', 'stage3_prefetch_bucket_size',
    'stage3_param_persistence_threshold', 'offload_optimizer', 'offload_param']);
  for (const key of Object.keys(config.zero_optimization)) assert.ok(zeroKeys.has(key), key);
  assert.deepEqual(config.zero_optimization.offload_param, { device: 'nvme', pin_memory: true, nvme_path: '/local_nvme' });

  const acc = gpumem(['export', '--format', 'accelerate', ...setup.slice(0, 14), '--micro-batch', '2', '--write', dir]);
  assert.equal(acc.status, 0, acc.stderr);
  const yaml = parse(readFileSync(join(dir, 'accelerate_config.yaml'), 'utf8'));
  // accelerate/commands/config/config_args.py (accelerate 1.2): ClusterConfig's keys.
  const accelerateKeys = new Set(['compute_environment', 'distributed_type', 'deepspeed_config', 'fsdp_config',
    'machine_rank', 'main_process_ip', 'main_process_port', 'main_training_function', 'mixed_precision',
    'num_machines', 'num_processes', 'rdzv_backend', 'same_network', 'use_cpu']);
  for (const key of Object.keys(yaml)) assert.ok(accelerateKeys.has(key), key);
  assert.equal(yaml.distributed_type, 'DEEPSPEED');
  assert.equal(yaml.num_machines, 2);
  assert.equal(yaml.deepspeed_config.zero_stage, 3);
  assert.equal(yaml.deepspeed_config.offload_param_device, 'nvme');
  // YAML 1.1 would read a bare no as false: accelerate's 'no' stays a string.
  const fp32 = gpumem(['export', '--format', 'accelerate', '--model', 'gpt2', '--gpus', '2', '--method', 'ddp',
    '--micro-batch', '2', '--compute', 'fp32']);
  assert.equal(fp32.status, 0, fp32.stderr);
  assert.equal(parse(fp32.stdout.split('# launch')[0].replace(/^# .*\n/, '')).mixed_precision, 'no');
});

test('estimate --from reads a DeepSpeed config and a vllm serve line into the same estimate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpumem-from-'));
  const setup = ['--model', 'meta-llama/Llama-3.2-1B', '--gpus', '4', '--seq-len', '1024'];
  const direct = gpumem(['estimate', ...setup, '--method', 'zero2', '--micro-batch', '4', '--grad-accumulation', '2', '--json']);
  assert.equal(direct.status, 0, direct.stderr);
  assert.equal(gpumem(['export', '--format', 'deepspeed', ...setup, '--method', 'zero2', '--micro-batch', '4',
    '--grad-accumulation', '2', '--write', dir]).status, 0);
  const back = gpumem(['estimate', '--from', join(dir, 'ds_config.json'), ...setup, '--json']);
  assert.equal(back.status, 0, back.stderr);
  assert.equal(JSON.parse(back.stdout).peak_bytes, JSON.parse(direct.stdout).peak_bytes);
  // The command line wins over the file, and says so.
  const over = gpumem(['estimate', '--from', join(dir, 'ds_config.json'), ...setup, '--micro-batch', '1']);
  assert.equal(over.status, 0, over.stderr);
  assert.match(over.stderr, /workload\.micro_batch is 1 \(the command line\), not the file's 4/);
  assert.match(over.stderr, /train_batch_size: the file's 32 is not micro-batch x gradient accumulation x GPUs \(8\)/);

  const serve = ['--gpu', 'h100-sxm', '--phase', 'inference', '--micro-batch', '8', '--seq-len', '2048', '--new-tokens', '128'];
  const vllm = gpumem(['export', '--format', 'vllm', '--model', 'meta-llama/Llama-3.1-8B', ...serve,
    '--framework', 'vllm', '--gpus', '2', '--method', 'tensor_parallel']);
  assert.equal(vllm.status, 0, vllm.stderr);
  const line = vllm.stdout.split('# launch\n')[1];
  assert.match(line, /^vllm serve meta-llama\/Llama-3\.1-8B --tensor-parallel-size 2 --max-model-len 2176 /);
  writeFileSync(join(dir, 'serve.sh'), line);
  const served = gpumem(['estimate', '--from', join(dir, 'serve.sh'), ...serve, '--json']);
  assert.equal(served.status, 0, served.stderr);
  const same = gpumem(['estimate', '--model', 'meta-llama/Llama-3.1-8B', ...serve, '--framework', 'vllm',
    '--gpus', '2', '--method', 'tensor_parallel', '--json']);
  assert.equal(JSON.parse(served.stdout).peak_bytes, JSON.parse(same.stdout).peak_bytes);
});

test('export --format torchtune writes a tune run line that --from reads back to the same estimate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpumem-tune-'));
  const setup = ['--model', 'meta-llama/Llama-3.2-1B', '--gpu', 'rtx-4090', '--framework', 'torchtune',
    '--finetune', 'lora', '--compute', 'pure_bf16', '--micro-batch', '4', '--seq-len', '2048'];
  const direct = gpumem(['estimate', ...setup, '--json']);
  assert.equal(direct.status, 0, direct.stderr);
  const out = gpumem(['export', '--format', 'torchtune', ...setup]);
  assert.equal(out.status, 0, out.stderr);
  const line = out.stdout.split('# launch\n')[1].split('\nnote:')[0];
  assert.match(line, /^tune run lora_finetune_single_device --config llama3_2\/1B_lora_single_device \\\n  model\._component_=/);
  writeFileSync(join(dir, 'tune.sh'), `${line}\n`);
  const back = gpumem(['estimate', '--from', join(dir, 'tune.sh'), '--gpu', 'rtx-4090', '--json']);
  assert.equal(back.status, 0, back.stderr);
  assert.equal(JSON.parse(back.stdout).peak_bytes, JSON.parse(direct.stdout).peak_bytes);
  // A config file (YAML) is told from an axolotl or accelerate one by its model builder.
  writeFileSync(join(dir, 'tune.yaml'), [
    'model:', '  _component_: torchtune.models.llama3_2.lora_llama3_2_1b',
    '  lora_attn_modules: [q_proj, v_proj]', '  apply_lora_to_mlp: False', '  lora_rank: 8',
    'batch_size: 4', 'dtype: bf16', 'optimizer:', '  _component_: torch.optim.AdamW', '  fused: True',
    'tokenizer:', '  max_seq_len: 2048', ''].join('\n'));
  const yaml = gpumem(['estimate', '--from', join(dir, 'tune.yaml'), '--gpu', 'rtx-4090', '--json']);
  assert.equal(yaml.status, 0, yaml.stderr);
  assert.equal(JSON.parse(yaml.stdout).peak_bytes, JSON.parse(direct.stdout).peak_bytes);
  // plan --from: the file's micro-batch stands, its layout is one of the plan's candidates.
  const plan = gpumem(['plan', '--from', join(dir, 'tune.sh'), '--gpu', 'rtx-4090', '--json']);
  assert.equal(plan.status, 0, plan.stderr);
  assert.match(plan.stderr, /parallel \{"method":"single"\} is weighed among the plan's candidates/);
  const chosen = JSON.parse(plan.stdout);
  assert.equal(chosen.choice.max_micro_batch, 4);
});
