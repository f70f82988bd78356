// Airwave's service worker: keeps the player's own files (the app shell) so an installed player
// opens at once, and offline. Music, cover art and API answers always go to the network and are
// never stored here.
//
// The server serves this file at /sw.js with the line below filled in: the shell's URLs and a
// version made from their contents, so each release installs a fresh cache and drops the old one.
const BUILD = { version: "dev", shell: ["/"] };
const PREFIX = "airwave-shell-";
const CACHE = PREFIX + BUILD.version;
const NEVER = /^\/(?:api|audio|art|rest|services)(?:\/|$)/;
const PAGE_TIMEOUT_MS = 4000; // a page that does not answer by then is taken from the cache

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(BUILD.shell.map((url) => new Request(url, { cache: "no-cache" })));
    await self.skipWaiting(); // a new release takes over open pages without waiting for them to close
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || NEVER.test(url.pathname)) return; // the network's
  if (request.mode === "navigate" && url.pathname === "/") event.respondWith(page(request));
  else if (url.pathname.startsWith("/web/")) event.respondWith(asset(event, request));
});

/** The page: from the network (it may carry a new release), from the cache when that fails. */
async function page(request) {
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(resolve, PAGE_TIMEOUT_MS); });
  try {
    const response = await Promise.race([fetch(request), late]);
    if (response) return response;
  } catch (err) {
    // offline or the server is away
  } finally {
    clearTimeout(timer);
  }
  const cached = await caches.match("/", { cacheName: CACHE });
  return cached || fetch(request);
}

/** A shell file: from the cache at once, refreshed from the network behind it for next time. */
async function asset(event, request) {
  const cache = await caches.open(CACHE);
  const fresh = fetch(request).then(async (response) => {
    if (response.status === 200 && response.type === "basic") await cache.put(request, response.clone());
    return response;
  });
  const cached = await cache.match(request);
  if (!cached) return fresh;
  event.waitUntil(fresh.catch(() => undefined));
  return cached;
}
