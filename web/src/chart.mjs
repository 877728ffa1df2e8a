// A stacked bar per distinct GPU rank (SVG), the capacity as a line, values on hover, and the
// same numbers in an accessible table.
import { componentInfo } from './components.mjs';
import { escapeHtml, size } from './format.mjs';

function rankLabel(rank) {
  const { first, last } = rank.ranks;
  return first === last ? `GPU ${first}` : `GPUs ${first}–${last}`;
}

export function chartHtml(ranks, capacityBytes, unit) {
  const names = [...new Set(ranks.flatMap((r) => Object.keys(r.components)))];
  const top = Math.max(capacityBytes, ...ranks.map((r) => r.peak_bytes)) * 1.08;
  const width = 640;
  const barHeight = 26;
  const gap = 14;
  const labelWidth = 110;
  const height = ranks.length * (barHeight + gap) + 24;
  const scale = (bytes) => (bytes / top) * (width - labelWidth - 80);  // room for the total
  const bars = ranks.map((rank, i) => {
    const y = i * (barHeight + gap) + 4;
    let x = labelWidth;
    const parts = Object.entries(rank.components).filter(([, b]) => b > 0).map(([name, bytes]) => {
      const w = scale(bytes);
      const rect = `<rect x="${x.toFixed(1)}" y="${y}" width="${Math.max(w, 0.5).toFixed(1)}" height="${barHeight}" fill="${componentInfo(name).color}"><title>${escapeHtml(`${rankLabel(rank)} · ${name}: ${size(bytes, unit)}`)}</title></rect>`;
      x += w;
      return rect;
    }).join('');
    return `<text x="0" y="${y + barHeight / 2 + 4}" class="axis">${escapeHtml(rankLabel(rank))}</text>${parts}`
      + `<text x="${(x + 4).toFixed(1)}" y="${y + barHeight / 2 + 4}" class="axis">${escapeHtml(size(rank.peak_bytes, unit))}</text>`;
  }).join('');
  const cx = labelWidth + scale(capacityBytes);
  const capacity = `<line x1="${cx.toFixed(1)}" x2="${cx.toFixed(1)}" y1="0" y2="${height - 16}" class="capacity"/>`
    + `<text x="${(cx - 4).toFixed(1)}" y="${height - 4}" class="axis" text-anchor="end">capacity ${escapeHtml(size(capacityBytes, unit))}</text>`;
  const legend = names.map((n) => `<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" fill="${componentInfo(n).color}"/></svg>${escapeHtml(n)}</li>`).join('');
  const head = `<tr><th>Component</th>${ranks.map((r) => `<th class="num">${escapeHtml(rankLabel(r))}</th>`).join('')}</tr>`;
  const rows = names.map((n) => `<tr><td>${escapeHtml(n)}</td>${ranks.map((r) => `<td class="num">${r.components[n] === undefined ? '–' : escapeHtml(size(r.components[n], unit))}</td>`).join('')}</tr>`).join('');
  const total = `<tr class="total"><td>peak</td>${ranks.map((r) => `<td class="num">${escapeHtml(size(r.peak_bytes, unit))}</td>`).join('')}</tr>`;
  return `<figure class="chart">
      <svg viewBox="0 0 ${width} ${height}" role="img" aria-label="Memory per GPU by component; the table below has the values">${bars}${capacity}</svg>
      <ul class="legend">${legend}</ul>
    </figure>
    <table data-testid="components"><caption>Memory per GPU by component</caption><thead>${head}</thead><tbody>${rows}${total}</tbody></table>`;
}
