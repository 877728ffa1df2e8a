// Number and text formatting for the calculator, one format everywhere: thousands grouped with
// commas and fixed decimals per kind of quantity. Units: GiB (2^30 bytes) or GB (10^9).

const UNITS = { gib: { bytes: 2 ** 30, label: 'GiB' }, gb: { bytes: 1e9, label: 'GB' } };

// (By hand rather than toLocaleString: the first Intl call loads ICU's data, tens of ms before the
// first answer can show.)
export function grouped(n, decimals = 0) {
  const fixed = Math.abs(Number(n)).toFixed(decimals);
  const [whole, fraction] = fixed.split('.');
  const sign = Number(n) < 0 && /[1-9]/.test(fixed) ? '-' : '';
  return `${sign}${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction ? `.${fraction}` : ''}`;
}

// Memory: two decimals in the chosen unit ("21.35 GiB", "6,843.20 GiB").
export function size(bytes, unit) {
  const u = UNITS[unit] ?? UNITS.gib;
  return `${grouped(bytes / u.bytes, 2)} ${u.label}`;
}

export const count = (n) => grouped(Math.round(n), 0);

// A fraction as a percentage with one decimal ("11.3 %").
export const percent = (fraction) => `${grouped(fraction * 100, 1)} %`;

// Dollars: cents from a dollar up, two significant digits below ("$0.0017").
export const money = (x) => (x >= 1 ? `$${grouped(x, 2)}` : `$${x.toPrecision(2)}`);

export const billions = (n) => `${grouped(n / 1e9, 2)} B`;

export const plural = (n, one, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// A duration in words ("3.2 hours", "5.1 days").
export function duration(seconds) {
  if (seconds < 90) return `${grouped(seconds, 0)} s`;
  if (seconds < 5400) return `${grouped(seconds / 60, 1)} minutes`;
  if (seconds < 2 * 86400) return `${grouped(seconds / 3600, 1)} hours`;
  return `${grouped(seconds / 86400, 1)} days`;
}

// A core error's message without its leading "[field]" (the page says the field in its words).
export const messageText = (message) => String(message).replace(/^\[[^\]]*\]\s*/, '');
