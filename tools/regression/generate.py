#!/usr/bin/env python3
"""Writes tests/regression/requests.json: about a thousand requests covering every command, mode,
framework, parallel method, offload, inference format and error code, drawn from a fixed seed.
tools/regression/record.mjs records a digest of each answer (tests/regression/digests.json); the
node test tests/js/regression.test.mjs requires every answer byte for byte the same, so that a
restructuring of the engine changes no number. Every validation set's `validate` answer is part
of it (by file).

Usage: python3 tools/regression/generate.py && node tools/regression/record.mjs
"""
import json
import os
import random

random.seed(20261128)
ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
OUT = os.path.join(ROOT, 'tests', 'regression', 'requests.json')

PRESETS = [m['id'] for m in json.load(open(os.path.join(ROOT, 'presets', 'models', 'index.json')))['models']]
GPUS = [g['id'] for g in json.load(open(os.path.join(ROOT, 'presets', 'gpus.json')))['gpus']]
SMALL = ['gpt2', 'meta-llama/Llama-3.2-1B', 'facebook/opt-125m', 'EleutherAI/pythia-410m-deduped', 'bert-base-uncased',
         'google/gemma-2-2b', 'microsoft/phi-2', 'Qwen/Qwen2.5-0.5B', 'TinyLlama/TinyLlama-1.1B-Chat-v1.0']
SMALL = [m for m in SMALL if m in PRESETS]
LARGE = [m for m in PRESETS if m not in SMALL]
FRAMEWORKS = ['transformers', 'litgpt', 'torchtune', 'unsloth', 'torchtitan']
METHODS = ['ddp', 'zero1', 'zero2', 'zero3', 'fsdp_full_shard', 'fsdp_shard_grad_op', 'fsdp_hybrid_shard', 'gemini',
           'tensor_parallel', 'pipeline']
requests = []


def add(name, request):
    requests.append({'name': name, 'request': request})


def training_workload(micro=True):
    w = {'finetune': random.choice(['full', 'lora', 'lora', 'dora', 'ia3']),
         'seq_len': random.choice([64, 128, 256, 512, 1024]),
         'compute': random.choice(['amp_bf16', 'amp_fp16', 'pure_bf16', 'fp32']),
         'optimizer': random.choice(['adamw', 'adamw', 'adamw_8bit', 'adafactor', 'sgd', 'sgd_momentum']),
         'grad_ckpt': random.choice([True, False, 'selective']),
         'attention': random.choice(['sdpa', 'eager', 'flash'])}
    if random.random() < 0.25:
        w['framework'] = random.choice(FRAMEWORKS)
    if w['finetune'] in ('lora', 'dora') and random.random() < 0.5:
        w['lora'] = {'r': random.choice([4, 8, 16, 64]), 'targets': random.choice([['q_proj', 'v_proj'], 'all-linear', ['q_proj', 'k_proj', 'v_proj', 'o_proj']])}
        if random.random() < 0.3:
            w['lora']['dropout'] = 0.1
    if w['finetune'] == 'lora' and random.random() < 0.2:
        w['weights'] = random.choice(['nf4', 'nf4_double_quant', 'int8', 'fp4'])
    if random.random() < 0.15:
        w['grad_accumulation'] = random.choice([2, 4])
    if random.random() < 0.1:
        w['software'] = random.choice([{'torch': '1.13'}, {'bitsandbytes': '0.45.0'}, {'peft': '0.10.0'}])
    if random.random() < 0.1:
        w['loss'] = 'plain_cross_entropy'
    if random.random() < 0.1:
        w['keep_outputs'] = True
    if micro:
        w['micro_batch'] = random.choice([1, 1, 2, 4, 8])
    return w


for i in range(500):
    gpus = random.choice([1, 1, 2, 4, 8])
    request = {'command': 'estimate', 'model': random.choice(SMALL if random.random() < 0.7 else LARGE),
               'cluster': {'gpu': random.choice(GPUS), 'gpus': gpus}, 'workload': training_workload()}
    if gpus > 1:
        request['parallel'] = {'method': random.choice(METHODS)}
        if random.random() < 0.15 and request['parallel']['method'] in ('zero2', 'zero3', 'fsdp_full_shard'):
            request['parallel']['offload'] = random.choice([{'optimizer': 'cpu'}, {'optimizer': 'cpu', 'params': 'cpu'},
                                                            {'optimizer': 'nvme', 'params': 'nvme', 'activations': 'cpu'}])
            request['cluster']['host_ram_bytes'] = random.choice([0, 1 << 37, 1 << 40])
        if random.random() < 0.1:
            request['parallel']['tp'] = 2
        if random.random() < 0.1:
            request['parallel']['cp'] = 2
    elif random.random() < 0.1:
        request['parallel'] = {'method': 'zero3', 'offload': {'optimizer': 'cpu'}}
    if random.random() < 0.2:
        request['metric'] = random.choice(['allocated', 'reserved'])
    if random.random() < 0.1:
        request['options'] = {'timeline': 32}
    if random.random() < 0.1:
        request['cluster']['headroom'] = random.choice([0, 0.1])
    add(f'training estimate {i}', request)

for i in range(100):
    request = {'command': 'plan', 'model': random.choice(SMALL + LARGE[:6]),
               'cluster': {'gpu': random.choice(GPUS), 'gpus': random.choice([1, 2, 4, 8])},
               'workload': training_workload(micro=random.random() < 0.2)}
    if random.random() < 0.2:
        request['cluster']['host_ram_bytes'] = 1 << 38
    add(f'training plan {i}', request)

for i in range(200):
    framework = random.choice(['transformers', 'transformers', 'litgpt', 'vllm', 'llama_cpp'])
    w = {'phase': 'inference', 'framework': framework, 'micro_batch': random.choice([1, 2, 8]),
         'seq_len': random.choice([64, 512, 2048]), 'new_tokens': random.choice([1, 16, 256]),
         'attention': random.choice(['sdpa', 'eager'])}
    if framework == 'llama_cpp':
        w['weights'] = random.choice(['gguf_q4_k_m', 'gguf_q8_0', 'gguf_q2_k'])
    else:
        w['weights'] = random.choice(['bf16', 'fp16', 'fp8', 'int8', 'nf4', 'gptq_4bit', 'awq_4bit'])
    if framework == 'vllm':
        w['kv_cache'] = {'kind': 'paged'}
    elif random.random() < 0.3:
        w['kv_cache'] = {'kind': random.choice(['static', 'dynamic']), 'dtype': random.choice(['bf16', 'fp8'])}
    gpus = random.choice([1, 1, 2, 4])
    request = {'command': random.choice(['estimate', 'estimate', 'plan']), 'model': random.choice(SMALL + LARGE),
               'cluster': {'gpu': random.choice(GPUS), 'gpus': gpus}, 'workload': w}
    if request['command'] == 'estimate':
        if gpus > 1:
            request['parallel'] = {'method': random.choice(['tensor_parallel', 'pipeline'])}
        if random.random() < 0.25:
            request['solve'] = random.choice(['max_context', 'max_batch'])
        if random.random() < 0.1:
            request['options'] = {'timeline': 16}
    add(f'inference {i}', request)

for i in range(80):
    gpus = random.choice([1, 2, 4, 8])
    request = {'command': random.choice(['estimate', 'plan']), 'mode': 'llmem',
               'model': random.choice([m for m in SMALL + LARGE if m != 'bert-base-uncased' and 'bert' not in m and 't5' not in m]),
               'cluster': {'gpu': random.choice(GPUS), 'gpus': gpus}, 'workload': {'seq_len': random.choice([128, 512, 1024])}}
    if request['command'] == 'estimate':
        request['workload']['micro_batch'] = random.choice([1, 2, 4])
        request['parallel'] = {'method': 'single' if gpus == 1 else random.choice(['cdp', 'adp', 'tp'])}
    add(f'llmem {i}', request)

for model in PRESETS:
    add(f'params {model}', {'command': 'params', 'model': model})
for command in ('models', 'gpus', 'sources', 'version'):
    add(command, {'command': command})

# Every error code, a few ways each.
errors = [
    {'command': 'nope'}, {'api_version': 2, 'command': 'version'}, {'command': 'params'},
    {'command': 'params', 'model': 'no/such-model'}, {'command': 'params', 'model': {'config': 5}},
    {'command': 'params', 'model': {'config': {'model_type': 'unknown_thing'}}},
    {'command': 'params', 'model': {'config': {'model_type': 'gpt2', 'n_embd': 768}}},
    {'command': 'params', 'model': {'config': {'model_type': 'gpt2', 'n_embd': 768, 'n_layer': 2, 'n_head': 7, 'vocab_size': 10}}},
    {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 'no-such-gpu'}, 'workload': {'micro_batch': 1}},
    {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4', 'gpus': 2}, 'parallel': {'method': 'single'}, 'workload': {'micro_batch': 1}},
    {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4', 'gpus': 4}, 'parallel': {'method': 'tensor_parallel'}, 'workload': {'micro_batch': 1}},
    {'command': 'estimate', 'mode': 'llmem', 'model': 'gpt2', 'cluster': {'gpu': 't4', 'gpus': 4}, 'parallel': {'method': 'dp_tp', 'tp': 3}, 'workload': {'micro_batch': 1}},
    {'command': 'estimate', 'mode': 'llmem', 'model': 'bert-base-uncased', 'cluster': {'gpu': 't4'}, 'workload': {'micro_batch': 1}},
    {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4'}, 'workload': {'micro_batch': 1 << 21}},
    {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4'}, 'workload': {'micro_batch': 1, 'typo': 1}},
]
for i, e in enumerate(errors):
    add(f'error {i}', e)

# Launch files (export, import): a generator of their own, so that the sections above keep their
# requests.
launch = random.Random(31)
for i in range(60):
    gpus = launch.choice([1, 2, 8, 16])
    method = launch.choice(['zero1', 'zero2', 'zero3', 'ddp', 'fsdp_full_shard', 'fsdp_hybrid_shard', 'single'])
    if gpus == 1:
        method = launch.choice(['single', 'zero3'])
    w = {'micro_batch': launch.choice([1, 2, 4]), 'seq_len': launch.choice([512, 2048]),
         'finetune': launch.choice(['full', 'lora']), 'compute': launch.choice(['amp_bf16', 'amp_fp16', 'fp32', 'pure_bf16']),
         'grad_ckpt': launch.choice([True, False]), 'grad_accumulation': launch.choice([1, 4])}
    if w['finetune'] == 'lora' and launch.random() < 0.3:
        w['weights'] = 'nf4_double_quant'
    parallel = {'method': method}
    if method in ('zero2', 'zero3') and launch.random() < 0.4:
        parallel['offload'] = launch.choice([{'optimizer': 'cpu'}, {'optimizer': 'nvme'}])
    request = {'command': 'export', 'format': launch.choice(['deepspeed', 'accelerate', 'torchrun', 'transformers']),
               'model': launch.choice(['meta-llama/Llama-3.2-1B', 'gpt2', 'Qwen/Qwen2.5-7B']),
               'cluster': {'gpu': launch.choice(['a100-sxm4-80gb', 'h100-sxm', 'rtx-4090']), 'gpus': gpus,
                           'gpus_per_node': 8},
               'parallel': parallel, 'workload': w}
    add(f'export training {i}', request)
for i in range(20):
    framework = launch.choice(['vllm', 'llama_cpp'])
    w = {'phase': 'inference', 'framework': framework, 'micro_batch': launch.choice([1, 8]),
         'seq_len': launch.choice([512, 4096]), 'new_tokens': launch.choice([1, 256])}
    w['weights'] = launch.choice(['bf16', 'fp8', 'nf4']) if framework == 'vllm' else 'gguf_q4_k_m'
    request = {'command': 'export', 'format': framework, 'model': 'meta-llama/Llama-3.1-8B',
               'cluster': {'gpu': 'h100-sxm', 'gpus': launch.choice([1, 2])}, 'workload': w}
    if request['cluster']['gpus'] > 1:
        request['parallel'] = {'method': launch.choice(['tensor_parallel', 'pipeline'])}
    add(f'export serving {i}', request)
for i, (fmt, file) in enumerate([
        ('deepspeed', {'train_micro_batch_size_per_gpu': 4, 'gradient_accumulation_steps': 2, 'bf16': {'enabled': True},
                       'zero_optimization': {'stage': 3, 'offload_param': {'device': 'cpu'}, 'overlap_comm': True,
                                             'stage3_prefetch_bucket_size': 'auto'}, 'gradient_clipping': 1.0}),
        ('deepspeed', {'train_batch_size': 64, 'train_micro_batch_size_per_gpu': 2, 'fp16': {'enabled': 'auto'},
                       'zero_optimization': {'stage': 2, 'reduce_bucket_size': 2e8}}),
        ('deepspeed', {'zero_optimization': {'stage': 0}}),
        ('vllm', 'vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 --max-model-len 8192 --enable-prefix-caching'),
        ('vllm', "python -m vllm.entrypoints.openai.api_server --model x"),
        ('vllm', 'vllm serve Qwen/Qwen2.5-7B --kv-cache-dtype fp8_e4m3 --gpu-memory-utilization=0.8 -q fp8')]):
    add(f'import {i}', {'command': 'import', 'format': fmt, 'file': file,
                        'request': {'model': 'meta-llama/Llama-3.1-8B', 'cluster': {'gpus': 8}}})

# torchtune's tune run line and its config read back (the export and import of launch_torchtune*.cpp).
tune = random.Random(37)
for i in range(24):
    gpus = tune.choice([1, 1, 4, 8])
    w = {'framework': 'torchtune', 'micro_batch': tune.choice([1, 2, 4]), 'seq_len': tune.choice([512, 2048]),
         'finetune': tune.choice(['full', 'lora', 'dora']), 'compute': tune.choice(['pure_bf16', 'fp32', 'amp_bf16']),
         'grad_ckpt': tune.choice([True, False]), 'grad_accumulation': tune.choice([1, 1, 4]),
         'optimizer': tune.choice(['adamw', 'adamw', 'adamw_8bit', 'sgd'])}
    if w['finetune'] != 'full':
        if tune.random() < 0.4:
            w['weights'] = tune.choice(['nf4', 'nf4_double_quant'])
        w['lora'] = {'r': tune.choice([8, 16]), 'targets': tune.choice(['all-linear', ['q_proj', 'v_proj'], ['q_proj', 'up_proj']])}
    parallel = {'method': 'single' if gpus == 1 else tune.choice(['fsdp_full_shard', 'fsdp_shard_grad_op', 'ddp'])}
    if tune.random() < 0.3:
        parallel['offload'] = tune.choice([{'activations': 'cpu'}, {'optimizer': 'cpu', 'params': 'cpu', 'gradients': 'cpu'}])
    request = {'command': 'export', 'format': 'torchtune',
               'model': tune.choice(['meta-llama/Llama-3.2-1B', 'meta-llama/Llama-3.1-8B-Instruct', 'Qwen/Qwen2.5-7B', 'gpt2']),
               'cluster': {'gpu': tune.choice(['h100-sxm', 'rtx-4090']), 'gpus': gpus}, 'parallel': parallel, 'workload': w}
    add(f'export torchtune {i}', request)
for i, file in enumerate([
        'tune run --nproc_per_node 4 lora_finetune_distributed --config llama3_1/8B_lora batch_size=4 tokenizer.max_seq_len=4096',
        'tune run full_finetune_single_device --config qwen2_5/7B_full_single_device optimizer_in_bwd=False compile=True',
        'tune run --nnodes 2 --nproc_per_node 8 full_finetune_distributed --config llama3_3/70B_full fsdp_cpu_offload=True',
        {'model': {'_component_': 'torchtune.models.gemma2.qlora_gemma2_9b', 'lora_attn_modules': ['q_proj', 'v_proj'],
                   'lora_rank': 8}, 'batch_size': 2, 'dtype': 'bf16', 'tokenizer': {'max_seq_len': 1024},
         'optimizer': {'_component_': 'bitsandbytes.optim.PagedAdamW8bit'}, 'epochs': 3}]):
    add(f'import torchtune {i}', {'command': 'import', 'format': 'torchtune', 'file': file,
                                  'request': {'cluster': {'gpu': 'h100-sxm'}}})

# transformers' generate by release (core/src/inference/generate_release.cpp).
gen = random.Random(41)
for i in range(16):
    w = {'phase': 'inference', 'micro_batch': gen.choice([1, 4, 16]), 'seq_len': gen.choice([256, 2048]),
         'new_tokens': gen.choice([1, 2, 64]), 'compute': gen.choice(['bf16', 'fp16']),
         'weights': gen.choice(['bf16', 'nf4', 'fp16']),
         'software': {'transformers': gen.choice(['4.30.2', '4.34.1', '4.38.2', '4.41.0', '4.44.2', '4.45.1', '4.46.3', '4.47.1'])}}
    if gen.random() < 0.3:
        w['kv_cache'] = {'kind': 'static'}
    add(f'generate release {i}', {'command': 'estimate',
                                  'model': gen.choice(['meta-llama/Llama-3.2-1B', 'gpt2', 'mistralai/Mistral-7B-v0.1']),
                                  'cluster': {'gpu': 'a100-sxm4-80gb'}, 'workload': w})

# transformers' repeat_kv by release: grouped-query models trained and served through SDPA before
# and after 4.54, and under torch before 2.5.
gen = random.Random(43)
for i in range(12):
    training = i % 2 == 0
    release = {'transformers': gen.choice(['4.40.2', '4.46.3', '4.53.3', '4.54.0', '4.57.1'])}
    if training and gen.random() < 0.3:
        release['torch'] = gen.choice(['2.3.1', '2.5.1'])
    w = {'micro_batch': gen.choice([1, 2, 4]), 'seq_len': gen.choice([512, 1024, 2048]), 'software': release}
    if training:
        w.update({'finetune': gen.choice(['lora', 'full']), 'grad_ckpt': gen.random() < 0.5})
    else:
        w.update({'phase': 'inference', 'new_tokens': gen.choice([16, 256, 1024])})
    add(f'transformers release {i}', {'command': 'estimate',
                                      'model': gen.choice(['meta-llama/Llama-3.2-1B', 'Qwen/Qwen2.5-0.5B', 'TinyLlama/TinyLlama-1.1B-Chat-v1.0']),
                                      'cluster': {'gpu': 'a100-sxm4-80gb'}, 'workload': w})

# AutoAWQ's fused modules by release: its AWQ preset and Llama-like models read as AWQ
# checkpoints, prompts around its 2,048-token default, stated max_seq_len and batches.
gen = random.Random(44)
for i in range(12):
    w = {'phase': 'inference', 'framework': 'autoawq', 'micro_batch': gen.choice([1, 2, 8]),
         'seq_len': gen.choice([128, 1024, 3000]), 'new_tokens': gen.choice([1, 64, 512]),
         'software': {'autoawq': gen.choice(['0.1.8', '0.2.4', '0.2.6', '0.2.7', '0.2.8', '0.2.9'])}}
    model = gen.choice(['Qwen/Qwen2.5-14B-Instruct-AWQ', 'meta-llama/Llama-3.2-1B', 'TinyLlama/TinyLlama-1.1B-Chat-v1.0'])
    if model != 'Qwen/Qwen2.5-14B-Instruct-AWQ':
        w['weights'] = 'awq_4bit'
    if gen.random() < 0.3:
        w['kv_cache'] = {'tokens': gen.choice([4096, 8192])}
    add(f'autoawq {i}', {'command': 'estimate', 'model': model, 'cluster': {'gpu': 'a100-sxm4-80gb'}, 'workload': w})

requests.sort(key=lambda r: 0)  # keep generation order
# The corpus only grows: requests already recorded keep their text (the random choices above draw
# from the catalogue, which grows), and new names are appended.
if os.path.exists(OUT):
    kept = json.load(open(OUT))['requests']
    known = {r['name'] for r in kept}
    requests = kept + [r for r in requests if r['name'] not in known]
validation = ['validation/' + f for f in sorted(os.listdir(os.path.join(ROOT, 'validation'))) if f.endswith('.json')]
os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, 'w') as f:
    f.write('{"about": "Requests whose answers must stay byte for byte the same; tools/regression/generate.py (earlier sections as first generated: the catalogue has grown since).",\n')
    f.write(' "validate_files": ' + json.dumps(validation + ['../shared/validation/dev.json']) + ',\n "requests": [\n')
    f.write(',\n'.join(json.dumps(r, separators=(',', ':')) for r in requests))
    f.write('\n]}\n')
print(f'{len(requests)} requests and {len(validation) + 1} validation files written to {os.path.normpath(OUT)}')
