// Stacked bars (SVG): one per distinct GPU rank against the GPU's memory, with the headroom the
// plan leaves shaded; for offloaded runs host RAM and NVMe per node against their budgets. The
// same numbers are in the tables of the page (answer.mjs).
import { componentInfo } from './components.mjs';
import { escapeHtml, size } from './format.mjs';

export function rankLabel(rank) {
  const { first, last } = rank.ranks;
  return first === last ? `GPU ${first}` : `GPUs ${first}–${last}`;
}

// bars: [{label, components: {id: bytes}, total, capacity (0: none), usable}]; `width` in CSS
// pixels (the SVG is drawn at its size, so its text stays legible on a phone).
function barsSvg(bars, unit, caption, width) {
  const top = Math.max(...bars.map((b) => Math.max(b.capacity, b.total)), 1) * 1.04;
  const barHeight = 24;
  const gap = 26;
  const labelWidth = width < 480 ? 62 : 86;
  const plot = width - labelWidth - 8;
  const height = bars.length * (barHeight + gap);
  const scale = (bytes) => (bytes / top) * plot;
  const rows = bars.map((bar, i) => {
    const y = i * (barHeight + gap) + 2;
    let x = labelWidth;
    const parts = Object.entries(bar.components).filter(([, b]) => b > 0).map(([id, bytes]) => {
      const w = scale(bytes);
      const info = componentInfo(id);
      const rect = `<rect x="${x.toFixed(1)}" y="${y}" width="${Math.max(w, 0.5).toFixed(1)}" height="${barHeight}" fill="${info.color}"><title>${escapeHtml(`${bar.label} · ${info.name}: ${size(bytes, unit)}`)}</title></rect>`;
      x += w;
      return rect;
    }).join('');
    let marks = '';
    if (bar.capacity > 0) {
      const cx = labelWidth + scale(bar.capacity);
      if (bar.usable > 0 && bar.usable < bar.capacity) {
        const ux = labelWidth + scale(bar.usable);
        marks += `<rect x="${ux.toFixed(1)}" y="${y - 3}" width="${(cx - ux).toFixed(1)}" height="${barHeight + 6}" class="headroom-zone"><title>${escapeHtml(`headroom: ${size(bar.capacity - bar.usable, unit)}`)}</title></rect>`;
      }
      marks += `<line x1="${cx.toFixed(1)}" x2="${cx.toFixed(1)}" y1="${y - 4}" y2="${y + barHeight + 4}" class="capacity"><title>${escapeHtml(`memory ${size(bar.capacity, unit)}`)}</title></line>`;
    }
    const total = `${size(bar.total, unit)}${bar.capacity > 0 ? ` of ${size(bar.capacity, unit)}` : ''}`;
    return `${marks}<text x="0" y="${y + barHeight / 2 + 4}" class="axis">${escapeHtml(bar.label)}</text>${parts}`
      + `<text x="${labelWidth}" y="${y + barHeight + 16}" class="axis small">${escapeHtml(total)}</text>`;
  }).join('');
  return `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(caption)}">${rows}</svg>`;
}

// The legend of the components that matter: those of at least 2 % of the largest total; the
// rest are counted (the tables list every one).
export function legendHtml(totals) {
  const largest = Math.max(...Object.values(totals), 1);
  const shown = Object.keys(totals).filter((id) => totals[id] >= 0.02 * largest);
  const small = Object.keys(totals).length - shown.length;
  return `<ul class="legend">${shown.map((id) => {
    const info = componentInfo(id);
    return `<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" fill="${info.color}"/></svg>${escapeHtml(info.name)}</li>`;
  }).join('')}${small ? `<li class="more">and ${small} small ${small === 1 ? 'one' : 'ones'}</li>` : ''}</ul>`;
}

// Each component's largest bytes over the bars.
function totalsOf(bars) {
  const out = {};
  for (const b of bars) {
    for (const [id, bytes] of Object.entries(b.components)) if (bytes > 0) out[id] = Math.max(out[id] ?? 0, bytes);
  }
  return out;
}

// The GPU ranks: one bar per group of identical ranks.
export function chartHtml(ranks, cluster, unit, width = 640) {
  const bars = ranks.map((r) => ({
    label: rankLabel(r), components: r.components, total: r.peak_bytes,
    capacity: cluster.gpu.memory_bytes, usable: cluster.usable_bytes,
  }));
  return `<figure class="chart" data-testid="chart">${barsSvg(bars, unit, 'Memory per GPU at the peak, by component', width)}${legendHtml(totalsOf(bars))}</figure>`;
}

// An offloaded step's host side per node: components per GPU times the GPUs of a node.
export function hostChartHtml(offload, budgets, unit, width = 640) {
  const perNode = offload.host_bytes_per_gpu > 0 ? offload.host_bytes_per_node / offload.host_bytes_per_gpu
    : offload.nvme_bytes_per_gpu > 0 ? offload.nvme_bytes_per_node / offload.nvme_bytes_per_gpu : 1;
  const scaled = (parts) => Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, v * perNode]));
  const bars = [
    { label: 'Host RAM', components: scaled(offload.host), total: offload.host_bytes_per_node, capacity: budgets.host },
    { label: 'NVMe', components: scaled(offload.nvme), total: offload.nvme_bytes_per_node, capacity: budgets.nvme },
  ].filter((bar) => bar.total > 0);
  if (offload.load_host_bytes_per_node > 0) {
    bars.push({ label: 'Loading', components: { checkpoint_load: offload.load_host_bytes_per_node },
      total: offload.load_host_bytes_per_node, capacity: budgets.host });
  }
  return `<figure class="chart" data-testid="host"><figcaption>Host RAM and NVMe per node</figcaption>${barsSvg(bars, unit, 'Host RAM and NVMe per node, by component', width)}${legendHtml(totalsOf(bars))}</figure>`;
}
