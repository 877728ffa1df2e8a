// The native command line, as users call it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
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
  assert.equal(JSON.parse(models.stdout).models.length, 42);
  assert.match(gpumem(['models']).stdout, /meta-llama\/Llama-3\.1-405B\s+Llama\s+llama\s+405,853,388,800/);
  const gpus = JSON.parse(gpumem(['gpus', '--json']).stdout).gpus;
  assert.ok(gpus.some((g) => g.id === 'h100-sxm'));
  assert.match(gpumem(['gpus']).stdout, /a100-sxm4-80gb/);
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
