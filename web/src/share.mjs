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

// The config a link's code holds; throws when the code is not one.
export async function decodeConfig(code) {
  if (!/^[A-Za-z0-9_-]+$/.test(code)) throw new Error('not a config code');
  const json = await through(new DecompressionStream('deflate-raw'), fromBase64url(code));
  return JSON.parse(new TextDecoder().decode(json));
}
