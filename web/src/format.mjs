// Number and text formatting for the calculator. Units: GiB (2^30 bytes) or GB (10^9).

const UNITS = { gib: { bytes: 2 ** 30, label: 'GiB' }, gb: { bytes: 1e9, label: 'GB' } };

export function size(bytes, unit) {
  const u = UNITS[unit] ?? UNITS.gib;
  const value = bytes / u.bytes;
  return `${value.toFixed(value >= 100 ? 1 : 2)} ${u.label}`;
}

export function count(n) {
  return Number(n).toLocaleString('en-US');
}

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function billions(n) {
  return `${(n / 1e9).toFixed(n >= 1e10 ? 1 : 2)} B`;
}
