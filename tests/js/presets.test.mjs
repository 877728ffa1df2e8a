// The shipped presets agree with the verified reference (../shared/reference/models.json) and
// carry what the page needs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { facadePath, repoRoot, sharedDir } from './paths.mjs';
import { handCount } from './hand_count.mjs';

const referencePath = `${sharedDir}reference/models.json`;
const reference = existsSync(referencePath) ? JSON.parse(readFileSync(referencePath, 'utf8')) : null;
const modelsDir = `${repoRoot}presets/models/`;
const index = JSON.parse(readFileSync(`${modelsDir}index.json`, 'utf8')).models;

test('one preset file per reference model, same config and sources', { skip: !reference && 'no ../shared/reference beside this checkout' }, () => {
  const files = readdirSync(modelsDir).filter((f) => f !== 'index.json');
  assert.ok(files.length >= Object.keys(reference).length);
  for (const [id, entry] of Object.entries(reference)) {
    const listed = index.find((m) => m.id === id);
    assert.ok(listed, `${id} missing from index.json`);
    const preset = JSON.parse(readFileSync(modelsDir + listed.file, 'utf8'));
    assert.deepEqual(preset.config, entry.config, id);
    assert.deepEqual(preset.source, entry.source, id);
    assert.equal(preset.published_params, entry.params, id);
    assert.equal(listed.model_type, entry.config.model_type);
  }
});

test('the catalogue: every preset listed, a verified config.json with its sources, aliases unique', () => {
  const files = readdirSync(modelsDir).filter((f) => f !== 'index.json');
  assert.equal(index.length, files.length);
  const names = new Set();
  for (const entry of index) {
    const preset = JSON.parse(readFileSync(modelsDir + entry.file, 'utf8'));
    assert.equal(preset.id, entry.id);
    assert.equal(entry.file, `${entry.id.replaceAll('/', '--')}.json`);
    assert.equal(preset.config.model_type, entry.model_type, entry.id);
    // Presets beyond the reference models (marked `reference` in the index) ship only as
    // verified copies of their config.json.
    if (!entry.reference) assert.equal(preset.verified, true, entry.id);
    if (reference) assert.equal(Boolean(entry.reference), Boolean(reference[entry.id]), entry.id);
    assert.ok(Array.isArray(preset.source) && preset.source.length >= 1, entry.id);
    assert.deepEqual(preset.aliases ?? [], entry.aliases ?? [], entry.id);
    for (const id of [entry.id, ...(entry.aliases ?? [])]) {
      assert.ok(!names.has(id), `${id} named twice`);
      names.add(id);
    }
  }
});

test('GPU presets: at least 20, every figure present and sourced', () => {
  const { gpus } = JSON.parse(readFileSync(`${repoRoot}presets/gpus.json`, 'utf8'));
  assert.ok(gpus.length >= 20);
  const required = ['v100-sxm2-16gb', 'v100-sxm2-32gb', 't4', 'rtx-2060', 'rtx-3090', 'rtx-4090', 'a10g',
    'l4', 'l40s', 'rtx-a6000', 'a100-sxm4-40gb', 'a100-sxm4-80gb', 'h100-sxm', 'h100-pcie', 'h200',
    'b200', 'mi250x', 'mi300x'];
  for (const id of required) assert.ok(gpus.some((g) => g.id === id), id);
  for (const g of gpus) {
    assert.ok(Number.isInteger(g.memory_bytes) && g.memory_bytes > 4 * 2 ** 30, g.id);
    for (const key of ['fp16_dense_flops', 'memory_bandwidth_bytes_per_s', 'link_bandwidth_bytes_per_s',
      'host_link_bandwidth_bytes_per_s']) {
      assert.ok(g[key] > 0, `${g.id}.${key}`);
    }
    for (const key of ['memory_bytes', 'flops', 'memory_bandwidth', 'link']) {
      assert.ok(g.sources[key]?.length > 10, `${g.id} source for ${key}`);
    }
  }
});

// Every preset's parameter count, as the core counts it, against its model card's exact figure
// where one is stated and against an independent count from the config alone (hand_count.mjs,
// written from transformers' modeling files) for every preset.
test('every preset: the core\'s parameter count equals the published figure and a hand count', async () => {
  const { loadGpumem } = await import(facadePath);
  const gpumem = await loadGpumem();
  const counted = new Map(gpumem.models().map((m) => [m.id, m.total_params]));
  for (const entry of index) {
    const preset = JSON.parse(readFileSync(modelsDir + entry.file, 'utf8'));
    const core = counted.get(entry.id);
    assert.ok(Number.isInteger(core), entry.id);
    if (preset.published_params !== null && preset.published_params !== undefined) {
      assert.equal(core, preset.published_params, `${entry.id}: published count`);
    }
    const hand = handCount(preset.config);
    assert.notEqual(hand, null, `${entry.id}: no hand count for model_type ${preset.config.model_type}`);
    assert.equal(core, hand, `${entry.id}: hand count`);
  }
});
