// Times the wasm core through the facade under Node, as the page calls it: µs per LLMem-mode
// estimate and per full plan (OPT-6.7b, 4 GPUs, sequence 512). Targets (issue: LLMem planner):
// estimate <= 20 µs, plan <= 1 ms. Run after the build: node bench/wasm_bench.mjs
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const facade = fileURLToPath(new URL('../build/wasm/wasm/gpumem.mjs', import.meta.url));
const { loadGpumem } = await import(facade);
const gpumem = await loadGpumem();

const base = { mode: 'llmem', model: 'facebook/opt-6.7b', cluster: { gpu: 'v100-sxm2-16gb', gpus: 4 } };
const estimate = { ...base, parallel: { method: 'adp' }, workload: { micro_batch: 4, seq_len: 512 } };
const plan = { ...base, workload: { seq_len: 512 } };

function time(label, run, minMs = 1000) {
  for (let i = 0; i < 20; i += 1) run();  // warm up
  let calls = 0;
  const start = performance.now();
  while (performance.now() - start < minMs) {
    run();
    calls += 1;
  }
  const us = ((performance.now() - start) * 1000) / calls;
  console.log(`${label.padEnd(44)} ${us.toFixed(1).padStart(9)} µs/call  (${calls} calls)`);
  return us;
}

time('estimate (llmem, OPT-6.7b, adp, 4 GPUs)', () => gpumem.estimate(estimate));
time('plan (llmem, OPT-6.7b, 4 GPUs, seq 512)', () => gpumem.plan(plan));
time('params (Llama-3.1-8B preset)', () => gpumem.params('meta-llama/Llama-3.1-8B'));
const detailed = { model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'h100-sxm', gpus: 1 },
  workload: { micro_batch: 4, seq_len: 1024, finetune: 'lora' } };
time('estimate (detailed, Llama-3.1-8B LoRA, 1 GPU)', () => gpumem.estimate(detailed));
time('plan (detailed, Llama-3.1-8B, 8 GPUs)', () => gpumem.plan({
  model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'a100-sxm4-80gb', gpus: 8 },
  workload: { seq_len: 2048, grad_ckpt: true } }), 3000);
const inference = { model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'rtx-4090' },
  workload: { phase: 'inference', weights: 'nf4', micro_batch: 4, seq_len: 4096, new_tokens: 256 } };
time('estimate (inference, Llama-3.1-8B nf4, 1 GPU)', () => gpumem.estimate(inference));
time('estimate (inference, solve max_context)', () => gpumem.estimate({
  ...inference, workload: { ...inference.workload, seq_len: undefined }, solve: 'max_context' }), 3000);
