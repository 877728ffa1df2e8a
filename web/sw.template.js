// The service worker (dist/sw.js is generated from this file by scripts/assemble_dist.mjs):
// pre-caches the files a visit needs so that it works offline after the first visit; a new
// version installs beside the old one and takes over when the page asks (its "update" prompt).
const VERSION = '__VERSION__';
const FILES = ['__FILES__'];
const CACHE = `gpumem-${VERSION}`;

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES)));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k.startsWith('gpumem-') && k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('message', (event) => {
  if (event.data === 'skip-waiting') self.skipWaiting();
});

// Cache first (the query string is state, not a different file), the network for the rest; what
// the network gives (the documents, read on demand) is kept for offline visits.
self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith(caches.open(CACHE).then(async (cache) => {
    const hit = await cache.match(request, { ignoreSearch: true });
    if (hit) return hit;
    const response = await fetch(request);
    if (response.ok) cache.put(request, response.clone());
    return response;
  }));
});
