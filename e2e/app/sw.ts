/**
 * The checkout's service worker (registered with `?sw=1`): it keeps the app shell (the page
 * and its script) in the Cache API, so a reload while offline still opens the checkout,
 * whose intent is in IndexedDB and resumes by itself. Network first, so a rebuilt page shows
 * at once; the cache when the network fails. Only the shell: the API (another origin) is
 * never touched, so payments go out exactly as without a worker.
 */

// The DOM lib has no worker types; these are the few this file uses.
interface ExtendableEvent extends Event {
  waitUntil(work: Promise<unknown>): void;
}
interface FetchEvent extends ExtendableEvent {
  readonly request: Request;
  respondWith(response: Promise<Response>): void;
}
interface WorkerScope {
  readonly location: Location;
  readonly clients: { claim(): Promise<void> };
  skipWaiting(): Promise<void>;
  addEventListener(type: 'install' | 'activate', listener: (event: ExtendableEvent) => void): void;
  addEventListener(type: 'fetch', listener: (event: FetchEvent) => void): void;
}

const worker = self as unknown as WorkerScope;
const CACHE = 'oncely-demo-shell';
/** Every navigation is the page (`/?api=…`, whatever the query), stored as `/`. */
const SHELL = ['/', '/app.js'];

worker.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => worker.skipWaiting()),
  );
});

// Controls the page that registered it at once: that page can reload offline.
worker.addEventListener('activate', (event) => event.waitUntil(worker.clients.claim()));

worker.addEventListener('fetch', (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== worker.location.origin) return;
  const path = request.mode === 'navigate' ? '/' : url.pathname;
  if (!SHELL.includes(path)) return;
  event.respondWith(
    fetch(request).then(
      async (response) => {
        if (response.ok) await (await caches.open(CACHE)).put(path, response.clone());
        return response;
      },
      async () => (await caches.match(path)) ?? Response.error(),
    ),
  );
});
