// A pasted config.json in the share link: its JSON text, deflate-compressed by the browser's
// CompressionStream ('deflate-raw') and base64url-encoded, so that the URL holds the whole state.

// Links past this many characters are cut by some chat tools and proxies; a config whose code is
// longer is not put in the link, and the page says so.
export const MAX_CONFIG_CODE = 12000;

async function through(stream, bytes) {
  const out = new Response(new Blob([bytes]).stream().pipeThrough(stream));
  return new Uint8Array(await out.arrayBuffer());
}

function base64url(bytes) {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64url(code) {
  const text = atob(code.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

// The config (a parsed object) as a link's code: compact JSON, compressed.
export async function encodeConfig(config) {
  const json = new TextEncoder().encode(JSON.stringify(config));
  return base64url(await through(new CompressionStream('deflate-raw'), json));
}

// A config.json is tens of KB: a link's code that inflates past this is not one (a crafted link
// must not inflate gigabytes in the tab).
const MAX_CONFIG_BYTES = 4 << 20;

// The config a link's code holds; throws when the code is not one.
export async function decodeConfig(code) {
  if (!/^[A-Za-z0-9_-]+$/.test(code) || code.length > 4 * MAX_CONFIG_CODE) throw new Error('not a config code');
  const stream = new Blob([fromBase64url(code)]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  const reader = stream.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_CONFIG_BYTES) {
      reader.cancel();
      throw new Error('not a config code');
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return JSON.parse(new TextDecoder().decode(bytes));
}
