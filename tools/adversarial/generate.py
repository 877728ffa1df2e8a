#!/usr/bin/env python3
"""Writes tests/adversarial/requests.json: hostile requests for the JSON API, each with the outcome
docs/api.md promises for it (an answer, or a coded error and its field), written from the API's
rules, not from running gpumem. The reproductions of the reliability issue come first; then, for
valid base requests of every command, each field in turn out of its range, of the wrong type,
null, and beside an unknown key. The doctest suite (tests/core/api/adversarial_test.cpp, natively,
under ASan+UBSan and in wasm) and the facade's node:test run every case; scripts/bench.sh prints
the slowest.

Usage: python3 tools/adversarial/generate.py   (deterministic; rerun after changing the rules)
"""
import copy
import json
import os

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'tests', 'adversarial', 'requests.json')

cases = []


def case(name, request=None, raw=None, code=None, field=None, repeat=None, heavy=False, **expect):
    """One case: `request` (an object) or `raw` (text); `repeat` {before, text, times, after}: the
    text repeated. `code` None: an answer (ok true). `heavy`: about a second natively, so left to
    the optimised builds (the facade's test, the bench), not the debug and sanitizer ones."""
    entry = {'name': name}
    if heavy:
        entry['heavy'] = True
    if request is not None:
        entry['request'] = request
    if raw is not None:
        entry['raw'] = raw
    if repeat is not None:
        entry['repeat'] = repeat
    entry['expect'] = {'ok': code is None}
    if code is not None:
        entry['expect']['code'] = code
    if field is not None:
        entry['expect']['field'] = field
    entry['expect'].update(expect)
    cases.append(entry)


def llama(layers=2, hidden=64, heads=4, **more):
    config = {'model_type': 'llama', 'hidden_size': hidden, 'num_hidden_layers': layers,
              'num_attention_heads': heads, 'intermediate_size': 4 * hidden, 'vocab_size': 1000}
    config.update(more)
    return {'config': config}


# The reliability issue's reproductions.
huge = llama(layers=340, hidden=1048576, heads=8192, intermediate_size=1048576)
case('exact: an inference estimate whose weights pass 2^53 bytes',
     {'command': 'estimate', 'model': huge, 'cluster': {'gpu': 'h100-sxm'},
      'workload': {'phase': 'inference', 'weights': 'fp32', 'seq_len': 1}}, code='request.too_large', field='model')
case('exact: training the same model names the model, not seq_len',
     {'command': 'estimate', 'model': huge, 'cluster': {'gpu': 'h100-sxm'},
      'workload': {'micro_batch': 1, 'seq_len': 1}}, code='request.too_large', field='model')
case('linear: an estimate of 4,096 blocks answers',
     {'command': 'estimate', 'model': llama(layers=4096, hidden=256), 'cluster': {'gpu': 'h100-sxm'},
      'workload': {'micro_batch': 1, 'seq_len': 128}}, heavy=True)
case('bounded: a plan of 4,096 blocks names the limit',
     {'command': 'plan', 'model': llama(layers=4096, hidden=256), 'cluster': {'gpu': 'h100-sxm', 'gpus': 8},
      'workload': {'seq_len': 128}}, code='request.too_large', field='model')
case('bounded: a plan of 129 blocks names the limit',
     {'command': 'plan', 'model': llama(layers=129, hidden=256), 'cluster': {'gpu': 'h100-sxm', 'gpus': 8},
      'workload': {'seq_len': 128}}, code='request.too_large', field='model')
case('bounded: a plan of 128 blocks of width 256 on 8 GPUs answers',
     {'command': 'plan', 'model': llama(layers=128, hidden=256), 'cluster': {'gpu': 'h100-sxm', 'gpus': 8},
      'workload': {'seq_len': 128}}, heavy=True)
case('bounded: solve max_batch over 129 blocks names the limit',
     {'command': 'estimate', 'model': llama(layers=129, hidden=256), 'cluster': {'gpu': 'h100-sxm'},
      'workload': {'seq_len': 128}, 'solve': 'max_batch'}, code='request.too_large', field='model')
case('bounded: 30,000 LoRA targets',
     {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4'},
      'workload': {'finetune': 'lora', 'micro_batch': 1, 'lora': {'targets': ['c_attn'] + [f't{i}' for i in range(30000)]}}},
     code='request.invalid_value', field='workload.lora.targets')
case('solver: no length within the model\'s positions',
     {'command': 'estimate', 'model': llama(max_position_embeddings=16), 'cluster': {'gpu': 'h100-sxm'},
      'workload': {'phase': 'inference', 'seq_len': 8, 'new_tokens': 16}, 'solve': 'max_context'},
     limited_by="the model's positions")
case('positions: max_position_embeddings 0 is refused as n_positions 0 is',
     {'command': 'params', 'model': llama(max_position_embeddings=0)}, code='config.invalid_value',
     field='model.config.max_position_embeddings')
case('positions: n_positions 0',
     {'command': 'params', 'model': {'config': {'model_type': 'gpt2', 'n_embd': 64, 'n_layer': 2, 'n_head': 4,
                                                'vocab_size': 100, 'n_positions': 0}}},
     code='config.invalid_value', field='model.config.n_positions')
for kind in ('lora', 'ia3'):
    for value in ([], True, 1, 'x'):
        case(f'types: {kind} as {json.dumps(value)}',
             {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4'},
              'workload': {'finetune': kind, 'micro_batch': 1, kind: value}},
             code='request.invalid_type', field=f'workload.{kind}')
case('types: command 1', {'command': 1}, code='request.invalid_type', field='command')
case('types: kv_cache null is absent',
     {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4'},
      'workload': {'phase': 'inference', 'kv_cache': None}})
case('types: kv_cache as a list names its path',
     {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4'},
      'workload': {'phase': 'inference', 'kv_cache': []}}, code='request.invalid_type', field='workload.kv_cache')
case('text: after a NUL', raw='{"command":"version"}\u0000garbage', code='json.parse_error')
case('text: a key twice', raw='{"command":"version","command":"models"}', code='json.duplicate_key')
case('text: a key twice, nested', raw='{"command":"params","model":{"config":{"model_type":"gpt2","n_embd":64,"n_embd":128}}}',
     code='json.duplicate_key')
case('echo: a 10 MB unknown key is cut in the error',
     raw='', repeat={'before': '{"command":"version","', 'text': 'k', 'times': 10_000_000, 'after': '":1}'},
     code='request.unknown_field', max_response_bytes=4096)
case('size: 17 MiB of [0,0,...] is refused before parsing',
     raw='', repeat={'before': '{"command":"version","x":[', 'text': '0,', 'times': 9_000_000, 'after': '0]}'},
     code='request.too_large')
case('depth: 100 nested arrays', raw='{"command":"version","x":' + '[' * 100 + ']' * 100 + '}', code='request.too_deep')
case('json: not JSON', raw='{"command":', code='json.parse_error')
case('json: a number', raw='42', code='request.invalid_type', field='request')


# Field mutations of valid bases.
BASES = {
    'training': {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4', 'gpus': 1},
                 'workload': {'finetune': 'lora', 'micro_batch': 1, 'seq_len': 128,
                              'lora': {'r': 8, 'targets': ['c_attn'], 'dropout': 0.1},
                              'compute': 'amp_fp16', 'optimizer': 'adamw', 'grad_ckpt': True,
                              'attention': 'sdpa', 'framework': 'transformers', 'grad_accumulation': 1},
                 'options': {'mfu': 0.4, 'max_micro_batch': 64}},
    'inference': {'command': 'estimate', 'model': 'gpt2', 'cluster': {'gpu': 't4'},
                  'workload': {'phase': 'inference', 'weights': 'bf16', 'micro_batch': 2, 'seq_len': 128,
                               'new_tokens': 8, 'framework': 'transformers',
                               'kv_cache': {'kind': 'dynamic', 'dtype': 'bf16'}}},
    'plan': {'command': 'plan', 'model': 'gpt2', 'cluster': {'gpu': 't4', 'gpus': 2, 'headroom': 0.05},
             'workload': {'finetune': 'full', 'seq_len': 128}},
    'llmem': {'command': 'estimate', 'mode': 'llmem', 'model': 'facebook/opt-125m', 'cluster': {'gpu': 'v100-sxm2-16gb', 'gpus': 2},
              'parallel': {'method': 'adp'}, 'workload': {'micro_batch': 1, 'seq_len': 128}},
}

# (base, path, kind, low, high, required): kind int | number | enum | object | list.
FIELDS = [
    ('training', 'cluster.gpus', 'int', 1, 65536, False),
    ('training', 'cluster.headroom', 'number', 0, 0.5, False),
    ('training', 'cluster.host_ram_bytes', 'int', 0, 1 << 50, False),
    ('training', 'workload.micro_batch', 'int', 1, 1 << 20, True),
    ('training', 'workload.seq_len', 'int', 1, 1 << 27, False),
    ('training', 'workload.grad_accumulation', 'int', 1, 65536, False),
    ('training', 'workload.lora.r', 'int', 1, 65536, False),
    ('training', 'workload.lora.dropout', 'number', 0, 1, False),
    ('training', 'workload.lora.targets', 'list', None, None, False),
    ('training', 'workload.compute', 'enum', None, None, False),
    ('training', 'workload.optimizer', 'enum', None, None, False),
    ('training', 'workload.attention', 'enum', None, None, False),
    ('training', 'workload.framework', 'enum', None, None, False),
    ('training', 'workload.finetune', 'enum', None, None, False),
    ('training', 'options.mfu', 'number', 0.01, 1, False),
    ('training', 'options.max_micro_batch', 'int', 1, 1 << 20, False),
    ('training', 'workload', 'object', None, None, False),
    ('training', 'cluster', 'object', None, None, False),
    ('training', 'options', 'object', None, None, False),
    ('inference', 'workload.micro_batch', 'int', 1, 1 << 20, False),
    ('inference', 'workload.seq_len', 'int', 1, 1 << 27, False),
    ('inference', 'workload.new_tokens', 'int', 1, 1 << 27, False),
    ('inference', 'workload.weights', 'enum', None, None, False),
    ('inference', 'workload.kv_cache.kind', 'enum', None, None, False),
    ('inference', 'workload.kv_cache.dtype', 'enum', None, None, False),
    ('inference', 'workload.kv_cache', 'object', None, None, False),
    ('plan', 'cluster.gpus', 'int', 1, 65536, False),
    ('plan', 'cluster.headroom', 'number', 0, 0.5, False),
    ('plan', 'workload.seq_len', 'int', 1, 1 << 27, False),
    ('llmem', 'workload.micro_batch', 'int', 1, 1 << 20, True),
    ('llmem', 'parallel.method', 'enum', None, None, False),
    ('llmem', 'parallel', 'object', None, None, False),
]


# What null (absent) means where the default does not answer: a required field inside goes
# missing, or the default method does not suit the GPUs.
NULL_OUTCOMES = {
    ('training', 'workload'): ('request.missing_field', 'workload.micro_batch'),
    ('training', 'cluster'): ('request.missing_field', 'cluster.gpu'),
    ('llmem', 'parallel.method'): ('parallel.invalid_method', 'parallel.method'),
    ('llmem', 'parallel'): ('parallel.invalid_method', 'parallel.method'),
}


def at(request, path):
    parts = path.split('.')
    for p in parts[:-1]:
        request = request[p]
    return request, parts[-1]


for base_name, path, kind, low, high, required in FIELDS:
    base = BASES[base_name]

    def mutated(value, path=path, base=base):
        r = copy.deepcopy(base)
        parent, key = at(r, path)
        parent[key] = value
        return r

    def removed(path=path, base=base):
        r = copy.deepcopy(base)
        parent, key = at(r, path)
        del parent[key]
        return r

    label = f'{base_name}: {path}'
    # null means absent: the default, or missing when required (docs/api.md), also of a field it
    # holds.
    if (base_name, path) in NULL_OUTCOMES:
        code, field = NULL_OUTCOMES[(base_name, path)]
        case(f'{label} null', mutated(None), code=code, field=field)
    elif required:
        case(f'{label} null', mutated(None), code='request.missing_field', field=path)
        case(f'{label} missing', removed(), code='request.missing_field', field=path)
    elif path not in ('workload.finetune',):
        case(f'{label} null', mutated(None))
    if kind in ('int', 'number'):
        case(f'{label} below its range', mutated(low - 1), code='request.invalid_value', field=path, range=[low, high])
        case(f'{label} above its range', mutated(high * 2 + 1), code='request.invalid_value', field=path, range=[low, high])
        for wrong in ('x', True, [], {}, 1e308):
            case(f'{label} = {json.dumps(wrong)}', mutated(wrong), code='request.invalid_value', field=path)
        if kind == 'int':
            case(f'{label} fractional', mutated(low + 0.5), code='request.invalid_value', field=path)
            case(f'{label} past 2^53', mutated(2 ** 53 + 1), code='request.invalid_value', field=path)
    elif kind == 'enum':
        for wrong in ('bogus', 5, True, [], ''):
            case(f'{label} = {json.dumps(wrong)}', mutated(wrong), code='request.invalid_value', field=path)
    elif kind == 'object':
        for wrong in ([], True, 1, 'x'):
            case(f'{label} = {json.dumps(wrong)}', mutated(wrong), code='request.invalid_type', field=path)
        r = copy.deepcopy(base)
        parent, key = at(r, path)
        parent[key] = dict(parent[key], bogus_field=1)
        case(f'{label} with an unknown key', r, code='request.unknown_field', field=f'{path}.bogus_field')
    elif kind == 'list':
        for wrong in ('x y', 5, [5], [None], [[]], ['q'] * 300, ['a' * 300]):
            case(f'{label} = {json.dumps(wrong)[:40]}', mutated(wrong), code='request.invalid_value', field=path)

# Every command's unknown top-level key, and the plain ones.
for command in ('params', 'estimate', 'plan', 'validate', 'models', 'gpus', 'version'):
    case(f'{command}: an unknown top-level key', {'command': command, 'bogus': 1}, code='request.unknown_field', field='bogus')
for command in ('models', 'gpus', 'version'):
    case(f'{command}: answers', {'command': command})
case('validate: points not a list', {'command': 'validate', 'points': {}}, code='request.missing_field', field='points')
case('validate: every point listed, scored or not',
     {'command': 'validate', 'points': [7, {'kind': 'peak', 'measured_gib': 'x'}, {'kind': 'peak', 'measured_gib': 1e-308}]},
     points=3)

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, 'w') as f:
    # One case a line.
    f.write('{"about": "Hostile requests and the outcome docs/api.md promises; written by '
            'tools/adversarial/generate.py.",\n "cases": [\n')
    f.write(',\n'.join(json.dumps(c, separators=(',', ':')) for c in cases))
    f.write('\n]}\n')
print(f'{len(cases)} cases written to {os.path.normpath(OUT)}')
