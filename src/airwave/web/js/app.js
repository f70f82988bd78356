// Start-up, hash routing, session resume, the theme, keyboard shortcuts and the takeover prompt.

import { api, session } from "./api.js";
import { isAd, player, trackTitle } from "./player.js";
import { dialog, h, icon, toast } from "./ui.js";
import * as views from "./views.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const bar = document.getElementById("playerbar");
let cleanup = null;
let ready = false;

const ROUTES = [
  [/^\/stations$/, (v) => views.stationsView(v)],
  [/^\/genres(?:\/(.+))?$/, (v, m) => views.genresView(v, m[1] && decodeURIComponent(m[1]))],
  [/^\/station\/(.+)$/, (v, m) => views.stationView(v, decodeURIComponent(m[1]))],
  [/^\/now$/, (v) => views.nowView(v)],
  [/^\/artist\/(.+)$/, (v, m) => views.artistView(v, decodeURIComponent(m[1]))],
  [/^\/album\/(.+)$/, (v, m) => views.albumView(v, decodeURIComponent(m[1]))],
  [/^\/bookmarks$/, (v) => views.bookmarksView(v)],
  [/^\/history$/, (v) => history(v, (m) => m.historyView(v))],
  [/^\/settings$/, (v) => views.settingsView(v, { onSignOut: signOut })],
  // the library on demand lives in its own module, loaded when first opened
  [/^\/library$/, (v, m, query) => lib(v, (l) => l.collectionView(v, query))],
  [/^\/library\/browse$/, (v, m, query) => lib(v, (l) => l.browseView(v, query))],
  [/^\/library\/genre\/(.+)$/, (v, m) => lib(v, (l) => l.genreView(v, decodeURIComponent(m[1])))],
  [/^\/library\/album\/(.+)$/, (v, m) => lib(v, (l) => l.albumView(v, decodeURIComponent(m[1])))],
  [/^\/library\/artist\/(.+)$/, (v, m) => lib(v, (l) => l.artistView(v, decodeURIComponent(m[1])))],
  [/^\/playlists$/, (v) => lib(v, (l) => l.playlistsView(v))],
  [/^\/playlist\/(.+)$/, (v, m) => lib(v, (l) => l.playlistView(v, decodeURIComponent(m[1])))],
];

/** Show the history screen (its module is loaded on first use). */
function history(view, show) {
  import("./history.js").then(show).catch((err) => {
    view.replaceChildren(h("h1", "History"), h("p.error", { role: "alert" }, err.message || "History could not be loaded."));
  });
}

/** Show a screen of the library module (loaded on first use). */
function lib(view, show) {
  views.library().then(show).catch((err) => {
    view.replaceChildren(h("h1", "Library"), h("p.error", { role: "alert" }, err.message || "The library could not be loaded."));
  });
}

// "Skip to content" moves focus to the page's content; its href (#main) is not a route
document.querySelector(".skip-link")?.addEventListener("click", (e) => {
  e.preventDefault();
  main.focus();
});

const TITLES = { library: "Library", playlists: "Playlists", playlist: "Playlist", stations: "Stations", genres: "Genres", station: "Station", now: "Now playing", history: "History", artist: "Artist", album: "Album", bookmarks: "Bookmarks", settings: "Settings", signin: "Sign in", reset: "Reset password", forgot: "Forgot password" };

// The tab shows the track while one is on (▶ while it plays), else the screen's name.
let routeTitle = "Airwave";
function showTitle() {
  const t = player.current;
  if (!session.token || !t) {
    document.title = routeTitle;
    return;
  }
  const who = isAd(t) ? "Advertisement" : t.artistName;
  document.title = `${player.audio.paused ? "" : "▶ "}${trackTitle(t)}${who ? ` – ${who}` : ""} · Airwave`;
}
player.addEventListener("change", (e) => { if (e.detail !== "time" && e.detail !== "volume") showTitle(); });

function route() {
  if (!ready) return;
  if (cleanup) { try { cleanup(); } catch (err) { /* view gone */ } cleanup = null; }
  const hash = location.hash.replace(/^#/, "");
  const raw = hash && hash !== "main" ? hash : "/stations"; // #main: the skip link's target
  const [path, query] = raw.split("?");
  const section = path.split("/")[1] || "stations";
  routeTitle = `${TITLES[section] || "Airwave"} · Airwave`;
  showTitle();
  document.body.dataset.route = section;
  for (const a of nav.querySelectorAll("a")) {
    if (a.dataset.nav === section || (section === "playlist" && a.dataset.nav === "playlists")) {
      a.setAttribute("aria-current", "page");
      // a phone's menu is one row that scrolls sideways: keep the current screen's link in it
      if (nav.scrollWidth > nav.clientWidth) nav.scrollLeft += a.getBoundingClientRect().left - nav.getBoundingClientRect().left - (nav.clientWidth - a.offsetWidth) / 2;
    } else a.removeAttribute("aria-current");
  }
  // Each screen draws into a container of its own: a screen left behind (its answers still on
  // the way, e.g. failing once the session ended) then draws into a detached element, never over
  // the screen that replaced it.
  const view = h("div.screen");
  main.replaceChildren(view);
  if (path === "/reset") {
    views.resetView(view, new URLSearchParams(query || "").get("token") || "");
    return;
  }
  if (path === "/forgot") {
    views.forgotView(view);
    return;
  }
  if (!session.token) {
    document.title = `${TITLES.signin} · Airwave`;
    showSignedOut();
    views.signinView(view, { onSignedIn: signedIn });
    return;
  }
  if (path === "/signin") {
    location.replace("#/stations");
    return;
  }
  for (const [pattern, show] of ROUTES) {
    const m = path.match(pattern);
    if (m) {
      const result = show(view, m, query);
      if (typeof result === "function") cleanup = result;
      if (document.activeElement === document.body || !main.contains(document.activeElement)) main.focus({ preventScroll: true });
      window.scrollTo(0, 0);
      return;
    }
  }
  view.replaceChildren(h("h1", "Not found"), h("p", h("a", { href: "#/stations" }, "Back to your stations")));
}

function showSignedIn() {
  nav.hidden = false;
  document.body.classList.add("signed-in");
}

function showSignedOut() {
  nav.hidden = true;
  bar.hidden = true;
  document.body.classList.remove("signed-in");
}

function signedIn() {
  showSignedIn();
  player.restore(); // where this listener left off on this browser, paused
  const hash = location.hash;
  if (!hash || hash === "#/signin" || hash === "#/" || hash.startsWith("#/reset") || hash.startsWith("#/forgot")) location.hash = "#/stations";
  else route();
}

async function signOut(skipLogout) {
  player.stop();
  if (skipLogout !== true) {
    try { await api("auth/logout", {}); } catch (err) { /* the session may be gone already */ }
  }
  session.forget();
  showSignedOut();
  location.hash = "#/signin";
}

session.onExpired = () => {
  player.stop();
  session.forget();
  showSignedOut();
  toast("Your session has ended. Sign in again.", "error");
  location.hash = "#/signin";
  route();
};

// ---- theme -------------------------------------------------------------------------------------

const themeButton = document.getElementById("theme-toggle");
function applyTheme(theme) {
  if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  const label = theme === "light" ? "light" : theme === "dark" ? "dark" : "system";
  themeButton.setAttribute("aria-label", `Colour theme: ${label}. Change it`);
  themeButton.title = `Theme: ${label}`;
  themeButton.replaceChildren(icon(theme === "light" ? "sun" : theme === "dark" ? "moon" : "auto"));
}
themeButton.addEventListener("click", () => {
  const order = ["system", "light", "dark"];
  const now = localStorage.getItem("airwave.theme") || "system";
  const next = order[(order.indexOf(now) + 1) % order.length];
  localStorage.setItem("airwave.theme", next);
  applyTheme(next);
});
applyTheme(localStorage.getItem("airwave.theme") || "system");

// ---- keyboard shortcuts: space, n, m, +, -, ? (the ? overlay lists them) --------------------------

document.addEventListener("keydown", (e) => {
  if (!session.token || e.ctrlKey || e.metaKey || e.altKey) return;
  const target = e.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable], dialog")) return;
  if (e.key === " " || e.key === "Spacebar") {
    if (target.closest && target.closest("button, a, summary")) return;
    e.preventDefault();
    player.toggle();
  } else if (e.key === "n" || e.key === "N") {
    player.skip();
  } else if (e.key === "m" || e.key === "M") {
    player.toggleMute();
  } else if (e.key === "?") {
    e.preventDefault();
    shortcutsHelp();
  } else if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
    if (!player.canSeek || (target.closest && target.closest("[role=slider], li[draggable]"))) return;
    e.preventDefault();
    player.seekBy(e.key === "ArrowLeft" ? -10 : 10);
  } else if (e.key === "+" || e.key === "=") {
    player.setVolume(player.volume + 0.1);
  } else if (e.key === "-" || e.key === "_") {
    player.setVolume(player.volume - 0.1);
  }
});

const SHORTCUTS = [
  ["Space", "Play or pause"],
  ["n", "Skip to the next track"],
  ["m", "Mute or unmute"],
  ["← / →", "Back or forward 10 seconds (library tracks)"],
  ["+ / −", "Volume up or down"],
  ["?", "This list"],
];

/** The `?` overlay: every keyboard shortcut (they work anywhere but in a text field). */
function shortcutsHelp() {
  if (document.querySelector("dialog.dialog[open]")) return;
  dialog("Keyboard shortcuts",
    h("dl.shortcuts", SHORTCUTS.map(([key, what]) => [h("dt", h("kbd", key)), h("dd", what)])),
    [["Close", true, "primary"]]);
}

// ---- keyboard focus stays in sight -------------------------------------------------------------
// Browsers scroll a focused element into view only when none of it shows; one half under the sticky
// top bar or the fixed player bar stays hidden. Scroll it clear of both (scroll-padding in the CSS
// covers the rest).

document.addEventListener("focusin", (e) => {
  const el = e.target;
  if (!(el instanceof Element) || el.closest(".topbar, .playerbar, dialog, .toasts")) return;
  requestAnimationFrame(() => {
    if (document.activeElement !== el) return;
    const r = el.getBoundingClientRect();
    const head = document.querySelector(".topbar");
    const top = head ? head.getBoundingClientRect().bottom : 0;
    const foot = bar.hidden || getComputedStyle(bar).display === "none" ? innerHeight : bar.getBoundingClientRect().top;
    const margin = 12;
    if (r.bottom > foot - margin / 2) window.scrollBy(0, Math.min(r.bottom - foot + margin, r.top - top - margin));
    else if (r.top < top + margin / 2) window.scrollBy(0, r.top - top - margin);
  });
});

// ---- another device is playing -----------------------------------------------------------------

let asking = false;
player.addEventListener("change", async (e) => {
  if (e.detail !== "violation" || !player.violation || asking) return;
  asking = true;
  const answer = await dialog("Playing on another device",
    h("p", "Your account is playing on another device. Play here instead? The other device will stop."),
    [["Not now", false], ["Play here", true, "primary"]]);
  asking = false;
  if (answer) {
    try { await player.takeOver(); } catch (err) { toast(err.message, "error"); }
  }
});

// ---- installable: a service worker keeps the app shell for instant and offline starts ------------

function registerServiceWorker() {
  if (!("serviceWorker" in navigator)) return;
  const updating = !!navigator.serviceWorker.controller; // a worker takes over: a new release
  navigator.serviceWorker.addEventListener("controllerchange", () => {
    if (updating) toast("Airwave has been updated. Reload the page to use the new version.", "info", 15000);
  });
  // refused (an untrusted certificate, private browsing): the player works without it
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {});
}

// ---- start -------------------------------------------------------------------------------------

async function start() {
  views.playerBar(bar);
  const stored = session.stored();
  if (stored) {
    try {
      const keep = !!localStorage.getItem("airwave.authToken");
      const listener = await api("auth/login", { existingAuthToken: stored, keepLoggedIn: keep }, { auth: false });
      session.remember(listener.authToken || stored, keep);
      session.listener = listener;
      showSignedIn();
      player.restore(); // the station or queue of before the reload, at its place, paused
    } catch (err) {
      session.token = null;
      // a dead or refused session is forgotten; a server that cannot be reached keeps it for the next try
      if (err.status >= 400 && err.status < 500) session.forget();
      if (err.code !== "AUTH_INVALID_TOKEN") toast(err.message, "error");
    }
  }
  ready = true;
  if (session.token && (!location.hash || location.hash === "#/signin" || location.hash === "#/")) location.replace("#/stations");
  route();
}

window.addEventListener("hashchange", route);
start();
if (document.readyState === "complete") registerServiceWorker();
else window.addEventListener("load", registerServiceWorker, { once: true });
