// The memory over a step (the API's `timeline`): stacked areas of what is allocated by
// component, above the constant the device holds beside PyTorch's allocator, the reserved bytes
// as a line, the GPU's memory and headroom, the phases named along the top and the peak marked
// with what is alive at it. PyTorch's memory_viz draws this for a run that happened; this is the
// run before it happens.
import { CONSTANT_COLOR, componentInfo } from './components.mjs';
import { escapeHtml, grouped, size } from './format.mjs';
import { phaseName } from './labels.mjs';
import { legendHtml } from './chart.mjs';

const HEIGHT = 260;
const TOP = 26;  // room for the phase names
const LEFT = 56;
const BOTTOM = 18;

// Runs of samples in one phase, numbered by step (a training replay runs two steps: the second
// carries what the first leaves).
function phaseRuns(samples) {
  const runs = [];
  let step = 0;
  for (const [i, s] of samples.entries()) {
    const last = runs[runs.length - 1];
    if (last && last.phase === s.phase) {
      last.end = i;
      continue;
    }
    if (s.phase === 'forward') step += 1;
    runs.push({ phase: s.phase, start: i, end: i, step });
  }
  return runs;
}

export function timelineHtml(timeline, cluster, unit, width = 640) {
  const samples = timeline.samples;
  if (samples.length < 2) return '';
  const ids = Object.keys(samples[0].components);
  const base = timeline.constant_bytes;
  const top = Math.max(cluster.gpu.memory_bytes, ...samples.map((s) => base + s.reserved_bytes)) * 1.04;
  const plotW = width - LEFT - 4;
  const plotH = HEIGHT - TOP - BOTTOM;
  const x = (i) => LEFT + (i / (samples.length - 1)) * plotW;
  const y = (bytes) => TOP + plotH - (bytes / top) * plotH;
  // Stacked from the bottom: the constant, then each component in the API's order.
  let below = samples.map(() => base);
  const areas = [`<polygon fill="${CONSTANT_COLOR}" opacity="0.55" points="${samples.map((_, i) => `${x(i).toFixed(1)},${y(0).toFixed(1)}`).join(' ')} ${samples.map((_, i) => `${x(samples.length - 1 - i).toFixed(1)},${y(base).toFixed(1)}`).join(' ')}"><title>CUDA context and libraries: ${escapeHtml(size(base, unit))}</title></polygon>`];
  for (const id of ids) {
    const above = samples.map((s, i) => below[i] + s.components[id]);
    if (above.every((v, i) => v === below[i])) continue;
    const upper = samples.map((_, i) => `${x(i).toFixed(1)},${y(above[i]).toFixed(1)}`);
    const lower = samples.map((_, i) => `${x(i).toFixed(1)},${y(below[i]).toFixed(1)}`).reverse();
    const info = componentInfo(id);
    areas.push(`<polygon fill="${info.color}" points="${upper.join(' ')} ${lower.join(' ')}"><title>${escapeHtml(info.name)}</title></polygon>`);
    below = above;
  }
  const reserved = samples.map((s, i) => `${x(i).toFixed(1)},${y(base + s.reserved_bytes).toFixed(1)}`).join(' ');
  const runs = phaseRuns(samples);
  const bands = runs.map((r, k) => {
    const x0 = k === 0 ? LEFT : (x(r.start) + x(r.start - 1)) / 2;
    const x1 = k === runs.length - 1 ? LEFT + plotW : (x(r.end) + x(r.end + 1)) / 2;
    const name = `${r.step > 1 && r.phase === 'forward' ? 'step 2: ' : ''}${phaseName(r.phase)}`;
    const fits = (x1 - x0) > name.length * 5.6;
    return `<rect x="${x0.toFixed(1)}" y="${TOP}" width="${(x1 - x0).toFixed(1)}" height="${plotH}" class="phase-band${k % 2 ? ' odd' : ''}"><title>${escapeHtml(name)}</title></rect>`
      + (fits ? `<text x="${((x0 + x1) / 2).toFixed(1)}" y="${TOP - 8}" class="axis small" text-anchor="middle">${escapeHtml(name)}</text>` : '');
  }).join('');
  const peak = samples[timeline.peak_sample];
  const px = x(timeline.peak_sample);
  const py = y(base + peak.allocated_bytes);
  const peakText = `most allocated: ${size(peak.allocated_bytes, unit)} (${phaseName(peak.phase)})`;
  // The label on the side of the mark it fits on (about 6.3 px a character at 11 px).
  const anchor = px + 10 + peakText.length * 6.3 > width ? 'end' : 'start';
  const line = (bytes, cls, label) => `<line x1="${LEFT}" x2="${LEFT + plotW}" y1="${y(bytes).toFixed(1)}" y2="${y(bytes).toFixed(1)}" class="${cls}"/>`
    + `<text x="${LEFT - 4}" y="${(y(bytes) + 4).toFixed(1)}" class="axis small" text-anchor="end">${escapeHtml(label)}</text>`;
  const svg = `<svg viewBox="0 0 ${width} ${HEIGHT}" width="${width}" height="${HEIGHT}" role="img" aria-label="Memory over the step, by component; the peak is marked">
    ${bands}${areas.join('')}
    <polyline points="${reserved}" class="reserved-line"><title>reserved by PyTorch's allocator (with the CUDA context: what nvidia-smi shows)</title></polyline>
    ${line(cluster.gpu.memory_bytes, 'capacity', `${grouped(cluster.gpu.memory_bytes / (unit === 'gb' ? 1e9 : 2 ** 30), 0)} ${unit === 'gb' ? 'GB' : 'GiB'}`)}
    ${cluster.usable_bytes < cluster.gpu.memory_bytes ? `<line x1="${LEFT}" x2="${LEFT + plotW}" y1="${y(cluster.usable_bytes).toFixed(1)}" y2="${y(cluster.usable_bytes).toFixed(1)}" class="headroom-line"/>` : ''}
    <circle cx="${px.toFixed(1)}" cy="${py.toFixed(1)}" r="4" class="peak-mark"/>
    <text x="${(px + (anchor === 'end' ? -7 : 7)).toFixed(1)}" y="${Math.max(py - 6, TOP + 10).toFixed(1)}" class="axis small peak-text" text-anchor="${anchor}">${escapeHtml(peakText)}</text>
    <text x="${LEFT}" y="${HEIGHT - 4}" class="axis small">allocations and frees in order, ${grouped(timeline.events)} in all →</text>
  </svg>`;
  const alive = Object.entries(peak.components).filter(([, b]) => b > 0).sort((a, b) => b[1] - a[1])
    .map(([id, b]) => `${componentInfo(id).name} ${size(b, unit)}`).join(', ');
  const totals = {};
  for (const id of ids) totals[id] = Math.max(...samples.map((s) => s.components[id]));
  for (const id of ids) if (!totals[id]) delete totals[id];
  return `<figure class="chart timeline" data-testid="timeline">${svg}${legendHtml(totals)}
    <figcaption>At the peak (the ${escapeHtml(phaseName(peak.phase))}), allocated: ${escapeHtml(alive)}; beside the allocator ${escapeHtml(size(base, unit))} (CUDA context and libraries). The dashed line is what the device holds in all (PyTorch's reserved bytes and that constant); the solid line is the GPU's memory, the dotted one what the headroom leaves.</figcaption></figure>`;
}
