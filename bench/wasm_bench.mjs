// Times the wasm core through the facade under Node, as the page calls it: each call differs from
// the previous one in the micro-batch or the sequence length (the core keeps what it derives from
// the model alone, never an answer), and each figure is the median of 5 rounds of at least 200 ms.
// The targets are the engine issue's; figures, not pass/fail: run by scripts/bench.sh.
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const facade = fileURLToPath(new URL('../build/wasm/wasm/gpumem.mjs', import.meta.url));
const { loadGpumem } = await import(facade);
const gpumem = await loadGpumem();

// `make(i)`: the i-th request of a round.
function time(label, target, make, roundMs = 200) {
  for (let i = 0; i < 10; i += 1) gpumem.respond(make(i));  // warm up
  const rounds = [];
  for (let round = 0; round < 5; round += 1) {
    let calls = 0;
    const start = performance.now();
    while (performance.now() - start < roundMs || calls < 3) {
      const answer = gpumem.respond(make(calls));
      if (!answer.ok) throw new Error(`${label}: ${answer.error.message}`);
      calls += 1;
    }
    rounds.push(((performance.now() - start) * 1000) / calls);
  }
  rounds.sort((a, b) => a - b);
  const us = rounds[2];
  const shown = us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`;
  console.log(`${label.padEnd(52)} ${shown.padStart(10)}  (target ${target})`);
  return us;
}

const seq = (i) => [512, 1024, 768, 2048][i % 4];
const mb = (i) => 1 + (i % 4);
time('params (Llama-3.1-8B preset)', '<= 20 µs', (i) => ({ command: 'params', model: i % 2 ? 'meta-llama/Llama-3.1-8B' : { preset: 'meta-llama/Llama-3.1-8B' } }));
time('LLMem estimate (OPT-6.7b, ADP, 4 V100s)', '<= 30 µs', (i) => ({
  command: 'estimate', mode: 'llmem', model: 'facebook/opt-6.7b', cluster: { gpu: 'v100-sxm2-16gb', gpus: 4 },
  parallel: { method: 'adp' }, workload: { micro_batch: mb(i), seq_len: 512 } }));
time('detailed estimate (Llama-3.1-8B LoRA, 1,024 tokens)', '<= 150 µs', (i) => ({
  command: 'estimate', model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'h100-sxm' },
  workload: { micro_batch: mb(i), seq_len: 1024, finetune: 'lora' } }));
time('inference estimate (Llama-3.1-8B NF4, 4 x 4,096 + 256)', '<= 100 µs', (i) => ({
  command: 'estimate', model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'rtx-4090' },
  workload: { phase: 'inference', weights: 'nf4', micro_batch: mb(i), seq_len: 4096, new_tokens: 256 } }));
time('max-context solve (same, batch 4)', '<= 2 ms', (i) => ({
  command: 'estimate', model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'rtx-4090' },
  workload: { phase: 'inference', weights: 'nf4', micro_batch: mb(i), new_tokens: 256 }, solve: 'max_context' }));
time('detailed plan (Llama-3.1-8B, 8 A100s)', '<= 15 ms', (i) => ({
  command: 'plan', model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'a100-sxm4-80gb', gpus: 8 },
  workload: { seq_len: seq(i), grad_ckpt: true }, options: { alternatives: false } }), 1000);
time('70B full fine-tuning plan (8 H100s, 4,096 tokens)', '<= 30 ms', (i) => ({
  command: 'plan', model: 'meta-llama/Llama-3.1-70B', cluster: { gpu: 'h100-sxm', gpus: 8 },
  workload: { finetune: 'full', seq_len: 4096 - 512 * (i % 2), grad_ckpt: true }, options: { alternatives: false } }), 1000);
// The planner as the page calls it: the choice and what it would take (changes planned too).
time('plan with what it would take (8B LoRA, 2 RTX 4090s)', '(no target)', (i) => ({
  command: 'plan', model: 'meta-llama/Llama-3.1-8B', cluster: { gpu: 'rtx-4090', gpus: 2 },
  workload: { finetune: 'lora', seq_len: seq(i) } }), 1000);
