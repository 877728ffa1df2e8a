// A small static file server for dist/, bound to 127.0.0.1 only. No dependencies. As safe as the
// page it serves: only files inside the folder (resolved, then compared whole path segment by
// segment), 400 for a URL it cannot decode, and the security headers a static host should send
// (README, "Hosting": the Content-Security-Policy with frame-ancestors, nosniff, no referrer).
// Usage: node scripts/serve.mjs DIR [PORT]; with PORT 0 the system picks a free port.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, relative, resolve, isAbsolute, sep } from 'node:path';

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8', '.wasm': 'application/wasm',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.webmanifest': 'application/manifest+json',
};

// The page's policy (the same as its <meta> tag, which cannot say frame-ancestors): the calculator
// is not framed by other sites; embed.html is made to be. The one other origin it may reach is
// the Hugging Face Hub, for a config.json the user asks for (embed.html's own tag keeps 'self').
const PAGE_POLICY = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; "
  + "img-src 'self' data:; connect-src 'self' https://huggingface.co; worker-src 'self'; object-src 'none'; base-uri 'none'; "
  + "form-action 'none'";
const DOC_POLICY = "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
  + "object-src 'none'; base-uri 'none'; form-action 'none'";

export function securityHeaders(file) {
  const headers = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' };
  if (extname(file) === '.html') {
    const page = ['index.html', 'embed.html'].some((name) => file.endsWith(`${sep}${name}`));
    const framed = file.endsWith(`${sep}embed.html`) ? 'frame-ancestors *' : "frame-ancestors 'none'";
    headers['Content-Security-Policy'] = `${page ? PAGE_POLICY : DOC_POLICY}; ${framed}`;
  }
  return headers;
}

// The file a URL path names inside `base`, or null when it names something outside it.
export function fileInside(base, urlPath) {
  const file = resolve(base, `.${urlPath.startsWith('/') ? urlPath : `/${urlPath}`}`);
  const rel = relative(base, file);
  if (rel === '') return file;
  if (rel.startsWith('..') || isAbsolute(rel) || rel.split(sep).includes('..')) return null;
  return file;
}

export function serve(directory, port = 0) {
  const base = resolve(directory);
  const server = createServer(async (request, response) => {
    let path;
    try {
      path = decodeURIComponent(new URL(request.url, 'http://127.0.0.1').pathname);
    } catch {
      response.writeHead(400, { 'Content-Type': 'text/plain', 'X-Content-Type-Options': 'nosniff' }).end('bad request');
      return;
    }
    let file = path.includes('\0') ? null : fileInside(base, path);
    if (file === null) {
      response.writeHead(403, { 'Content-Type': 'text/plain', 'X-Content-Type-Options': 'nosniff' }).end('forbidden');
      return;
    }
    try {
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      response.writeHead(200, {
        'Content-Type': types[extname(file)] ?? 'application/octet-stream',
        'Cache-Control': 'no-cache',
        ...securityHeaders(file),
      });
      response.end(body);
    } catch {
      response.writeHead(404, { 'Content-Type': 'text/plain', 'X-Content-Type-Options': 'nosniff' }).end('not found');
    }
  });
  // A handler that throws must not take the server down.
  server.on('clientError', (error, socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
  return new Promise((done) => server.listen(port, '127.0.0.1', () => done(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const server = await serve(process.argv[2] ?? 'dist', Number(process.argv[3] ?? 8080));
  console.log(`gpumem calculator: http://127.0.0.1:${server.address().port}/`);
}
