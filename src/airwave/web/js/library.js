// The library on demand (Premium): My Collection, browsing, album and artist pages, playlists and
// the Up next queue. Loaded when first opened, so the radio player's first load stays small.

import { api, session } from "./api.js";
import { player } from "./player.js";
import { cover, debounce, dialog, DRAWN, errorText, field, formatTime, h, icon, toast } from "./ui.js";
import { go, startStation } from "./views.js";

const TYPES = [["", "All"], ["AR", "Artists"], ["AL", "Albums"], ["TR", "Songs"], ["PL", "Playlists"]];
const SORTS = [["DATE_ADDED", "Recently added"], ["RECENT", "Recently played"], ["ALPHA", "Name (A–Z)"], ["ARTIST", "Artist"]];
const MAX = 1000;

// ---- data ---------------------------------------------------------------------------------------

/** Annotations of catalogue objects and of the listener's playlists, keyed by pandoraId. */
async function details(ids) {
  const out = {};
  const unique = [...new Set(ids)];
  for (let i = 0; i < unique.length; i += 500) {
    const answer = await api("v4/catalog/getDetails", { pandoraIds: unique.slice(i, i + 500) });
    Object.assign(out, answer.annotations || {});
  }
  return out;
}

function hrefOf(note) {
  const id = encodeURIComponent(note.pandoraId);
  switch (note.type) {
    case "AL": return `#/library/album/${id}`;
    case "AR": return `#/library/artist/${id}`;
    case "PL": return `#/playlist/${id}`;
    case "TR": return note.albumId ? `#/library/album/${encodeURIComponent(note.albumId)}` : "";
    default: return "";
  }
}

/** What on-demand playback names as its source: the album, artist, playlist or track. */
function contextOf(note) {
  return { pandoraId: note.pandoraId, name: note.name, href: hrefOf(note) };
}

/** The playable tracks of an album, artist, playlist or track (annotations, in order). */
async function tracksOf(note) {
  if (note.type === "TR") return [note];
  if (note.type === "AL") {
    const found = await details(note.tracks || []);
    return (note.tracks || []).map((id) => found[id]).filter(Boolean);
  }
  if (note.type === "AR") {
    const answer = await api("v4/catalog/getAllArtistTracks", { artistPandoraId: note.pandoraId, limit: MAX });
    return answer.tracks || [];
  }
  if (note.type === "PL") {
    const answer = await api("v4/playlists/getTracks", { pandoraId: note.pandoraId, limit: MAX });
    const notes = answer.annotations || {};
    return (answer.tracks || []).filter((e) => e.available !== false).map((e) => notes[e.pandoraId]).filter(Boolean);
  }
  return [];
}

async function playNote(note, { shuffle = false } = {}) {
  try {
    const tracks = await tracksOf(note);
    if (!tracks.length) {
      toast("Nothing here to play.", "error");
      return;
    }
    await player.playOnDemand(tracks, contextOf(note), { shuffle });
  } catch (err) {
    toast(errorText(err), "error");
  }
}

/** The listener's playlists (they are kept in their collection), by name. */
async function myPlaylists() {
  const answer = await api("v4/collections/getSortedItems", { types: ["PL"], sortOrder: "ALPHA", limit: MAX });
  const notes = answer.annotations || {};
  return (answer.items || []).map((i) => notes[i.pandoraId]).filter(Boolean);
}

// ---- shared pieces --------------------------------------------------------------------------------

function onDemand() {
  return !!session.flags.onDemand;
}

/** What a listener whose plan has no on-demand listening sees instead of the library. */
function upsell(main, title) {
  main.replaceChildren(h("h1", title),
    h("section.card.upsell", { "aria-labelledby": "upsell-title" },
      h("h2", { id: "upsell-title" }, "Your library on demand is part of Premium"),
      h("p", "With Premium you play any album, artist or song whenever you like, keep My Collection, make playlists and choose what plays next."),
      h("p", "Your plan has radio: stations that learn from your thumbs. Ask the administrator of this server to move your account to Premium."),
      h("a.button.primary", { href: "#/stations" }, "Back to your stations")));
}

function libraryNav(current) {
  const links = [["collection", "#/library", "My Collection"], ["browse", "#/library/browse", "Browse"], ["playlists", "#/playlists", "Playlists"]];
  return h("nav.subnav", { "aria-label": "Library" }, h("ul.chips", links.map(([key, href, label]) =>
    h("li", h("a.chip", { href, "aria-current": key === current ? "page" : null }, label)))));
}

function errorBox(err) {
  return h("p.error", { role: "alert" }, errorText(err));
}

/** A modal that asks for a name; resolves with it, or null. */
async function askName(title, value, action) {
  const input = h("input", { type: "text", value, maxlength: 200, required: true });
  const body = field("Name", input);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      input.closest("dialog").querySelector("button.primary").click();
    }
  });
  setTimeout(() => input.select(), 0);
  const ok = await dialog(title, body, [["Cancel", false], [action, true, "primary"]]);
  const name = input.value.trim();
  return ok && name ? name : null;
}

/** A button that puts an object in My Collection or takes it out (aria-pressed tells which). */
function collectButton(pandoraId) {
  const btn = h("button", { type: "button", "aria-pressed": "false" }, "Add to My Collection");
  const show = (held) => {
    btn.setAttribute("aria-pressed", String(held));
    btn.textContent = held ? "In My Collection" : "Add to My Collection";
  };
  btn.addEventListener("click", async () => {
    const held = btn.getAttribute("aria-pressed") === "true";
    try {
      await api(held ? "v4/collections/removeItem" : "v4/collections/addItem", { pandoraId });
      show(!held);
      toast(held ? "Removed from My Collection." : "Added to My Collection.");
    } catch (err) { toast(errorText(err), "error"); }
  });
  api("v4/collections/hasItems", { pandoraIds: [pandoraId] }).then((a) => show(!!(a.items || {})[pandoraId])).catch(() => {});
  return btn;
}

/** Add tracks to one of the listener's playlists, or to a new one. */
export async function addToPlaylist(trackIds) {
  const ids = trackIds.filter((id) => /^TR:/.test(id || ""));
  if (!ids.length) return null;
  let lists = [];
  try {
    lists = await myPlaylists();
  } catch (err) {
    toast(errorText(err), "error");
    return null;
  }
  const what = ids.length === 1 ? "1 track" : `${ids.length} tracks`;
  const choice = await dialog("Add to playlist", h("p", `Add ${what} to:`),
    [...lists.map((p) => [p.name, p.pandoraId]), ["New playlist…", "new", "primary"], ["Cancel", null]]);
  if (!choice) return null;
  try {
    if (choice === "new") {
      const name = await askName("New playlist", "", "Create");
      if (!name) return null;
      const made = await api("v4/playlists/create", { name, tracks: ids });
      toast(`Made the playlist “${made.name}” with ${what}.`);
      return made;
    }
    const chosen = lists.find((p) => p.pandoraId === choice);
    let version = chosen.version;
    for (let attempt = 0; ; attempt++) {
      try {
        const edited = await api("v4/playlists/appendItems", { pandoraId: chosen.pandoraId, version, pandoraIds: ids });
        toast(`Added ${what} to “${chosen.name}”.`);
        return edited;
      } catch (err) {
        // appending does not depend on the order: read the playlist's version again and retry once
        if (err.code !== "PLAYLIST_VERSION_MISMATCH" || attempt) throw err;
        version = (await details([chosen.pandoraId]))[chosen.pandoraId].version;
      }
    }
  } catch (err) {
    toast(errorText(err), "error");
    return null;
  }
}

/** The actions of one track: queue it, collect it, add it to a playlist, go to its album. */
async function trackMenu(note, context) {
  let held = false;
  try {
    held = !!((await api("v4/collections/hasItems", { pandoraIds: [note.pandoraId] })).items || {})[note.pandoraId];
  } catch (err) { /* the menu works without it */ }
  const choice = await dialog(note.name, h("p.muted", [note.artistName, note.albumName].filter(Boolean).join(" · ")), [
    ["Play next", "next"],
    ["Add to queue", "queue"],
    ["Add to playlist…", "playlist"],
    [held ? "Remove from My Collection" : "Add to My Collection", "collect"],
    ...(note.albumId ? [["Go to album", "album"]] : []),
    ...(note.artistId ? [["Go to artist", "artist"]] : []),
    ["Cancel", null],
  ]);
  const ctx = context || contextOf(note);
  try {
    if (choice === "next") {
      await player.playNext([note], ctx);
      toast(`“${note.name}” plays next.`);
    } else if (choice === "queue") {
      await player.enqueue([note], ctx);
      toast(`Added “${note.name}” to the queue.`);
    } else if (choice === "playlist") {
      await addToPlaylist([note.pandoraId]);
    } else if (choice === "collect") {
      await api(held ? "v4/collections/removeItem" : "v4/collections/addItem", { pandoraId: note.pandoraId });
      toast(held ? `Removed “${note.name}” from My Collection.` : `Added “${note.name}” to My Collection.`);
    } else if (choice === "album") {
      go(`#/library/album/${encodeURIComponent(note.albumId)}`);
    } else if (choice === "artist") {
      go(`#/library/artist/${encodeURIComponent(note.artistId)}`);
    }
  } catch (err) { toast(errorText(err), "error"); }
}

/** One track: number or cover, title, artist and album, length, Play and its menu. */
function trackRow(note, { onPlay, number, context, attrs = {}, extra = [] }) {
  return h("li.track-row", { dataset: { pandoraId: note.pandoraId }, ...attrs },
    number !== undefined ? h("span.num", { "aria-hidden": "true" }, String(number)) : cover(note.art, 90, "", DRAWN.row),
    h("span.grow", h("strong", note.name), h("small", [note.artistName, note.albumName].filter(Boolean).join(" · "))),
    h("span.time", formatTime(note.duration)),
    h("button.icon.row-play", { type: "button", "aria-label": `Play ${note.name}`, title: "Play", onclick: onPlay }, icon("play")),
    h("button.small", { type: "button", "aria-haspopup": "dialog", "aria-label": `More for ${note.name}`, onclick: () => trackMenu(note, context) }, "More"),
    ...extra);
}

/** A tile (cover first) for an album, artist or playlist, with a Play button. */
function tile(note) {
  const albums = note.albumCount === 1 ? "1 album" : `${note.albumCount} albums`;
  const sub = note.type === "AL" ? note.artistName : note.type === "AR" ? (note.albumCount ? `Artist · ${albums}` : "Artist") : `Playlist · ${note.totalTracks || 0} tracks`;
  return h("li.tile", { dataset: { pandoraId: note.pandoraId } },
    h("a", { href: hrefOf(note) }, cover(note.art, 500, "", DRAWN.tile), h("strong", note.name)),
    h("small", sub || ""),
    h("button.small", { type: "button", "aria-label": `Play ${note.name}`, onclick: () => playNote(note) }, "Play"));
}

/** A status line read out by screen readers (moves, imports). */
function announcer() {
  return h("p.visually-hidden", { role: "status" });
}

/** Rows (li[data-key], focusable) that move by drag and drop and by Alt+Up/Down when focused;
 * onMove(key, toIndex, fromIndex) hears of each finished move. */
function reorderable(list, onMove, say) {
  list.addEventListener("keydown", (e) => {
    if (!e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
    const row = e.target;
    if (!(row instanceof HTMLElement) || !row.matches("li[data-key]") || row.parentElement !== list) return;
    e.preventDefault();
    const rows = [...list.children];
    const from = rows.indexOf(row);
    const to = from + (e.key === "ArrowUp" ? -1 : 1);
    if (to < 0 || to >= rows.length) return;
    if (to < from) rows[to].before(row);
    else rows[to].after(row);
    row.focus();
    say.textContent = `Moved to position ${to + 1} of ${rows.length}.`;
    onMove(row.dataset.key, to, from);
  });
  let dragged = null;
  let start = -1;
  list.addEventListener("dragstart", (e) => {
    const row = e.target instanceof Element && e.target.closest("li[data-key]");
    if (!row) return;
    dragged = row;
    start = [...list.children].indexOf(row);
    row.classList.add("dragging");
    e.dataTransfer.effectAllowed = "move";
    e.dataTransfer.setData("text/plain", row.dataset.key);
  });
  list.addEventListener("dragover", (e) => {
    if (!dragged) return;
    e.preventDefault();
    const over = e.target instanceof Element && e.target.closest("li[data-key]");
    if (!over || over === dragged || over.parentElement !== list) return;
    const box = over.getBoundingClientRect();
    if (e.clientY < box.top + box.height / 2) over.before(dragged);
    else over.after(dragged);
  });
  const finish = () => {
    if (!dragged) return;
    const row = dragged;
    dragged = null;
    row.classList.remove("dragging");
    const to = [...list.children].indexOf(row);
    if (to !== start && to >= 0) {
      say.textContent = `Moved to position ${to + 1} of ${list.children.length}.`;
      onMove(row.dataset.key, to, start);
    }
  };
  list.addEventListener("drop", (e) => { e.preventDefault(); finish(); });
  list.addEventListener("dragend", finish);
}

const MOVE_HINT = "To reorder, drag a track, or focus it and press Alt+Up or Alt+Down.";

// ---- My Collection --------------------------------------------------------------------------------

export async function collectionView(main, query) {
  if (!onDemand()) return upsell(main, "Library");
  const params = new URLSearchParams(query || "");
  const type = TYPES.some(([code]) => code === params.get("type")) ? params.get("type") : "";
  const sort = SORTS.some(([code]) => code === params.get("sort")) ? params.get("sort") : "DATE_ADDED";
  const filter = h("input", { type: "search", placeholder: "Name or artist" });
  const sortBy = h("select", SORTS.map(([code, label]) => h("option", { value: code, selected: code === sort }, label)));
  // the kind from the address as it is now: a kind's link may have been followed a moment ago,
  // before this view was drawn again for it
  sortBy.addEventListener("change", () => {
    const now = new URLSearchParams(location.hash.split("?")[1] || "");
    const kind = location.hash.startsWith("#/library?") ? now.get("type") ?? type : type;
    location.replace(`#/library?type=${kind}&sort=${sortBy.value}`);
  });
  const kinds = h("nav.subnav", { "aria-label": "Kinds" }, h("ul.chips", TYPES.map(([code, label]) =>
    h("li", h("a.chip", { href: `#/library?type=${code}&sort=${sort}`, "aria-current": code === type ? "page" : null }, label)))));
  const count = h("p.muted", { role: "status" });
  const tiles = h("ul.tiles", { "aria-label": "Artists, albums and playlists" });
  const songs = h("ol.list", { "aria-label": "Songs" });
  main.replaceChildren(
    h("div.page-head", h("h1", "My Collection"), libraryNav("collection")),
    kinds,
    h("div.row.spread.tools", field("Filter", filter), field("Sort by", sortBy)),
    count, tiles, songs);
  let items = [];
  let notes = {};
  const render = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = items.map((i) => notes[i.pandoraId]).filter((n) => n && (!q ||
      n.name.toLowerCase().includes(q) || (n.artistName || "").toLowerCase().includes(q)));
    const tracks = shown.filter((n) => n.type === "TR");
    tiles.replaceChildren(...shown.filter((n) => n.type !== "TR").map(tile));
    songs.replaceChildren(...tracks.map((n, i) => trackRow(n, { onPlay: () => player.playOnDemand(tracks, contextOf(n), { start: i }) })));
    tiles.hidden = !tiles.children.length;
    songs.hidden = !songs.children.length;
    count.textContent = items.length
      ? `${shown.length} of ${items.length} items`
      : "Nothing here yet. Browse the library and add albums, artists, songs and playlists to My Collection.";
  };
  filter.addEventListener("input", render);
  try {
    const answer = await api("v4/collections/getSortedItems", { types: type ? [type] : undefined, sortOrder: sort, limit: MAX });
    items = answer.items || [];
    notes = answer.annotations || {};
    render();
  } catch (err) {
    count.replaceWith(errorBox(err));
  }
}

// ---- browse: search and genres ------------------------------------------------------------------

const BROWSE_KINDS = [["AR", "Artists"], ["AL", "Albums"], ["TR", "Songs"]];
const BROWSE_SORTS = {
  AR: [["ALPHA", "Name (A–Z)"], ["ALBUM_COUNT", "Most albums"]],
  AL: [["ALPHA", "Name (A–Z)"], ["ARTIST", "Artist"], ["DATE_ADDED", "Recently added"], ["YEAR", "Year (newest)"]],
  TR: [["ALPHA", "Name (A–Z)"], ["ARTIST", "Artist"], ["DATE_ADDED", "Recently added"]],
};
const BROWSE_PAGE = 60;

/** The whole library's artists, albums or songs: sorted, filtered, a page at a time. */
function wholeLibrary(query) {
  const params = new URLSearchParams(query || "");
  const kind = BROWSE_KINDS.some(([code]) => code === params.get("kind")) ? params.get("kind") : "AR";
  const sorts = BROWSE_SORTS[kind];
  const sort = sorts.some(([code]) => code === params.get("sort")) ? params.get("sort") : "ALPHA";
  const filter = h("input", { type: "search", placeholder: kind === "AR" ? "Artist name" : "Name or artist", autocomplete: "off", value: params.get("filter") || "" });
  const sortBy = h("select", sorts.map(([code, label]) => h("option", { value: code, selected: code === sort }, label)));
  const here = () => `#/library/browse?kind=${kind}&sort=${sortBy.value}&filter=${encodeURIComponent(filter.value.trim())}`;
  sortBy.addEventListener("change", () => location.replace(here()));
  const kinds = h("nav.subnav", { "aria-label": "Library lists" }, h("ul.chips", BROWSE_KINDS.map(([code, label]) =>
    h("li", h("a.chip", { href: `#/library/browse?kind=${code}`, "aria-current": code === kind ? "page" : null }, label)))));
  const status = h("p.muted", { role: "status" });
  const tiles = h("ul.tiles", { "aria-label": kind === "AR" ? "Artists" : "Albums", hidden: true });
  const songs = h("ol.list", { "aria-label": "Songs", hidden: true });
  const more = h("button", { type: "button", hidden: true }, "Show more");
  const label = BROWSE_KINDS.find(([code]) => code === kind)[1].toLowerCase();
  let shown = [];
  let asked = 0;
  const load = async (fresh) => {
    const mine = ++asked;
    if (fresh) shown = [];
    more.disabled = true;
    try {
      const answer = await api("v4/catalog/browse", { type: kind, sortOrder: sort, filter: filter.value.trim(), offset: shown.length, limit: BROWSE_PAGE });
      if (mine !== asked) return;
      const notes = answer.annotations || {};
      const page = (answer.items || []).map((id) => notes[id]).filter(Boolean);
      shown = shown.concat(page);
      if (kind === "TR") {
        const tracks = shown;
        songs.replaceChildren(...tracks.map((n, i) => trackRow(n, { onPlay: () => player.playOnDemand(tracks, contextOf(n), { start: i }) })));
      } else {
        tiles.replaceChildren(...shown.map(tile));
      }
      tiles.hidden = kind === "TR" || !shown.length;
      songs.hidden = kind !== "TR" || !shown.length;
      more.hidden = shown.length >= answer.total;
      const q = filter.value.trim();
      status.textContent = answer.total
        ? `${shown.length} of ${answer.total} ${label}`
        : q ? `No ${label} match “${q}”.` : `The library has no ${label} yet.`;
    } catch (err) {
      if (mine === asked) status.textContent = errorText(err);
    } finally {
      more.disabled = false;
    }
  };
  filter.addEventListener("input", debounce(() => {
    history.replaceState(null, "", here());
    load(true);
  }, 250));
  more.addEventListener("click", () => load(false));
  load(true);
  return h("section", { "aria-labelledby": "library-title" },
    h("h2", { id: "library-title" }, "The whole library"), kinds,
    h("div.row.spread.tools", field("Filter", filter), field("Sort by", sortBy)),
    status, tiles, songs, more);
}

export async function browseView(main, query) {
  if (!onDemand()) return upsell(main, "Browse");
  const input = h("input", { type: "search", placeholder: "Artists, albums or songs", autocomplete: "off" });
  const status = h("p.muted", { role: "status" });
  const results = h("div.results-page");
  const genres = h("ul.chips", { "aria-label": "Genres" });
  main.replaceChildren(
    h("div.page-head", h("h1", "Browse"), libraryNav("browse")),
    h("section", { "aria-labelledby": "find-title" }, h("h2", { id: "find-title" }, "Search the library"),
      field("Search", input), status, results),
    h("section", { "aria-labelledby": "genres-title" }, h("h2", { id: "genres-title" }, "Genres"), genres),
    wholeLibrary(query));
  let asked = 0;
  const run = async () => {
    const q = input.value.trim();
    const mine = ++asked;
    if (!q) {
      results.replaceChildren();
      status.textContent = "";
      return;
    }
    try {
      const answer = await api("v3/sod/search", { query: q, types: ["AR", "AL", "TR"], count: 40 });
      if (mine !== asked) return;
      const notes = answer.annotations || {};
      const found = (answer.results || []).map((id) => notes[id]).filter(Boolean);
      const tracks = found.filter((n) => n.type === "TR");
      const others = found.filter((n) => n.type !== "TR");
      status.textContent = found.length ? `${found.length} results` : `Nothing matches “${q}”.`;
      results.replaceChildren(
        others.length ? h("ul.tiles", { "aria-label": "Artists and albums" }, others.map(tile)) : "",
        tracks.length ? h("ol.list", { "aria-label": "Songs" }, tracks.map((n, i) => trackRow(n, { onPlay: () => player.playOnDemand(tracks, contextOf(n), { start: i }) }))) : "");
    } catch (err) {
      if (mine === asked) results.replaceChildren(errorBox(err));
    }
  };
  input.addEventListener("input", debounce(run, 250));
  try {
    const answer = await api("music/genrecategories", {});
    genres.replaceChildren(...(answer.categories || []).map((c) =>
      h("li", h("a.chip", { href: `#/library/genre/${encodeURIComponent(c.token)}` }, c.name))));
  } catch (err) {
    genres.replaceWith(errorBox(err));
  }
}

export async function genreView(main, token) {
  if (!onDemand()) return upsell(main, "Genre");
  main.replaceChildren(h("p.loading", "Loading…"));
  try {
    const answer = await api("music/genres", { token });
    const stations = answer.stations || [];
    const samples = stations.flatMap((s) => (s.sampleTracks || []).map((t) => t.pandoraId));
    const albums = [...new Set(stations.flatMap((s) => (s.sampleTracks || []).map((t) => t.albumMusicId ? `AL:${String(t.albumMusicId).replace(/\D/g, "")}` : "")).filter(Boolean))];
    const notes = await details([...samples, ...albums]);
    const name = (answer.category && answer.category.name) || token;
    main.replaceChildren(
      h("div.page-head", h("h1", name), libraryNav("browse")),
      albums.length ? h("section", { "aria-labelledby": "genre-albums" }, h("h2", { id: "genre-albums" }, "Albums"),
        h("ul.tiles", albums.map((id) => notes[id]).filter(Boolean).map(tile))) : "",
      ...stations.map((s, k) => {
        const tracks = (s.sampleTracks || []).map((t) => notes[t.pandoraId]).filter(Boolean);
        const ctx = { pandoraId: s.pandoraId, name: s.name, href: location.hash };
        return h("section", { "aria-labelledby": `genre-${k}` },
          h("div.row.spread", h("h2", { id: `genre-${k}` }, s.name),
            h("div.row",
              h("button.small", { type: "button", "aria-label": `Play ${s.name} songs`, onclick: () => player.playOnDemand(tracks, ctx) }, "Play"),
              h("button.small", { type: "button", "aria-label": `Start ${s.stationName || s.name}`, onclick: () => startStation({ musicId: s.musicId, creationSource: "genre" }) }, "Start station"))),
          h("ol.list", { "aria-label": `${s.name} songs` }, tracks.map((n, i) => trackRow(n, { onPlay: () => player.playOnDemand(tracks, ctx, { start: i }) }))));
      }));
  } catch (err) {
    main.replaceChildren(h("h1", "Genre"), errorBox(err));
  }
}

// ---- album and artist -----------------------------------------------------------------------------

export async function albumView(main, id) {
  if (!onDemand()) return upsell(main, "Album");
  main.replaceChildren(h("p.loading", "Loading…"));
  try {
    const album = (await details([id]))[id];
    if (!album || album.type !== "AL") throw new Error("This album is not in the library.");
    const tracks = await tracksOf(album);
    const ctx = contextOf(album);
    const ids = tracks.map((t) => t.pandoraId);
    main.replaceChildren(
      h("div.page-head.station-head.album-head", cover(album.art, 500, `Cover of ${album.name}`, DRAWN.head),
        h("div", h("p.muted.kind", "Album"), h("h1", album.name),
          h("p", album.artistId ? h("a", { href: `#/library/artist/${encodeURIComponent(album.artistId)}` }, album.artistName) : album.artistName),
          h("p.muted", `${tracks.length} ${tracks.length === 1 ? "track" : "tracks"} · ${formatTime(album.duration)}`),
          h("div.row.wrap",
            h("button.primary", { type: "button", onclick: () => player.playOnDemand(tracks, ctx) }, "Play"),
            h("button", { type: "button", onclick: () => player.playOnDemand(tracks, ctx, { shuffle: true }) }, "Shuffle"),
            collectButton(album.pandoraId),
            h("button", { type: "button", onclick: () => addToPlaylist(ids) }, "Add to playlist"),
            h("button", { type: "button", onclick: async () => { await player.enqueue(tracks, ctx); toast(`Added “${album.name}” to the queue.`); } }, "Add to queue")))),
      h("ol.list.tracks", { "aria-label": "Tracks" }, tracks.map((t, i) =>
        trackRow(t, { number: t.trackNumber || i + 1, context: ctx, onPlay: () => player.playOnDemand(tracks, ctx, { start: i }) }))));
  } catch (err) {
    main.replaceChildren(h("h1", "Album"), errorBox(err));
  }
}

export async function artistView(main, id) {
  if (!onDemand()) return upsell(main, "Artist");
  main.replaceChildren(h("p.loading", "Loading…"));
  try {
    const answer = await api("v4/catalog/getDetails", { pandoraId: id });
    const notes = answer.annotations || {};
    const artist = notes[id];
    const page = answer.artistDetails;
    if (!artist || !page) throw new Error("This artist is not in the library.");
    const ctx = contextOf(artist);
    const top = page.topTracks.map((t) => notes[t]).filter(Boolean);
    const albums = page.topAlbums.map((a) => notes[a]).filter(Boolean);
    const list = h("ol.list", { id: "artist-tracks", "aria-label": "Top tracks" });
    const showTracks = (tracks) => list.replaceChildren(...tracks.map((t, i) =>
      trackRow(t, { context: ctx, onPlay: () => player.playOnDemand(tracks, ctx, { start: i }) })));
    showTracks(top);
    const title = h("h2", { id: "tracks-title" }, "Top tracks");
    const all = h("button.small", { type: "button", "aria-controls": "artist-tracks", "aria-pressed": "false", onclick: async () => {
      const showAll = all.getAttribute("aria-pressed") !== "true";
      try {
        showTracks(showAll ? await tracksOf(artist) : top);
        all.setAttribute("aria-pressed", String(showAll));
        title.textContent = showAll ? "All tracks" : "Top tracks";
        list.setAttribute("aria-label", title.textContent);
      } catch (err) { toast(errorText(err), "error"); }
    } }, "All tracks");
    main.replaceChildren(
      h("div.page-head.station-head", cover(artist.art, 500, artist.name, DRAWN.head),
        h("div", h("p.muted.kind", "Artist"), h("h1", artist.name),
          h("p.muted", `${artist.albumCount || 0} albums · ${artist.trackCount || 0} tracks`),
          h("div.row.wrap",
            h("button.primary", { type: "button", onclick: () => playNote(artist) }, "Play"),
            h("button", { type: "button", onclick: () => playNote(artist, { shuffle: true }) }, "Shuffle"),
            collectButton(artist.pandoraId),
            h("button", { type: "button", onclick: () => startStation({ musicId: artist.musicId, creationSource: "artist" }) }, "Start station")))),
      h("section", { "aria-labelledby": "tracks-title" }, h("div.row.spread", title, all), list),
      h("section", { "aria-labelledby": "albums-title" }, h("h2", { id: "albums-title" }, "Albums"), h("ul.tiles", albums.map(tile))));
  } catch (err) {
    main.replaceChildren(h("h1", "Artist"), errorBox(err));
  }
}

// ---- playlists -------------------------------------------------------------------------------------

export async function playlistsView(main) {
  if (!onDemand()) return upsell(main, "Playlists");
  const list = h("ul.tiles", { "aria-label": "Your playlists" });
  const count = h("p.muted", { role: "status" });
  const report = h("div");
  const file = h("input", { type: "file", accept: ".m3u8,.m3u,.xspf" });
  const create = async () => {
    const name = await askName("New playlist", "", "Create");
    if (!name) return;
    try {
      const made = await api("v4/playlists/create", { name });
      go(`#/playlist/${encodeURIComponent(made.pandoraId)}`);
    } catch (err) { toast(errorText(err), "error"); }
  };
  file.addEventListener("change", async () => {
    const chosen = file.files && file.files[0];
    if (!chosen) return;
    try {
      const content = await chosen.text();
      const answer = await api("v4/playlists/import", { content, format: /\.xspf$/i.test(chosen.name) ? "xspf" : "m3u8" });
      const made = answer.playlist;
      const unmatched = answer.unmatched || [];
      report.replaceChildren(h("section.card.import-report", { "aria-labelledby": "import-title" },
        h("h2", { id: "import-title" }, `Imported “${made.name}”: ${made.totalTracks} ${made.totalTracks === 1 ? "track" : "tracks"}`),
        unmatched.length
          ? [h("p", { role: "status" }, `${unmatched.length} ${unmatched.length === 1 ? "entry matches" : "entries match"} no track of the library:`),
            h("ul.unmatched", unmatched.map((u) => h("li", h("strong", `Line ${u.line}: `), u.entry, h("small", ` (${u.reason})`))))]
          : h("p", { role: "status" }, "Every entry matched a track of the library."),
        h("a.button", { href: `#/playlist/${encodeURIComponent(made.pandoraId)}` }, "Open the playlist")));
      file.value = "";
      await load();
    } catch (err) {
      report.replaceChildren(errorBox(err));
    }
  });
  main.replaceChildren(
    h("div.page-head", h("h1", "Playlists"), libraryNav("playlists")),
    h("div.row.wrap.tools", h("button.primary", { type: "button", onclick: create }, "New playlist"),
      field("Import an M3U8 or XSPF file", file)),
    report, count, list);
  async function load() {
    try {
      const lists = await myPlaylists();
      list.replaceChildren(...lists.map(tile));
      count.textContent = lists.length ? `${lists.length} ${lists.length === 1 ? "playlist" : "playlists"}` : "No playlists yet. Make one with New playlist, import an M3U8 or XSPF file, or add a track from its More menu.";
    } catch (err) {
      count.replaceChildren(errorBox(err));
    }
  }
  await load();
}

export async function playlistView(main, id) {
  if (!onDemand()) return upsell(main, "Playlist");
  main.replaceChildren(h("p.loading", "Loading…"));
  let data = null; // the getTracks answer: entries, version, totalTracks
  let note = null;
  const say = announcer();
  const list = h("ol.list.tracks.reorder", { "aria-label": "Tracks", "aria-describedby": "move-hint" });
  const heading = h("h1");
  const summary = h("p.muted");
  const art = h("div.head-art");

  const tracks = () => data.tracks.map((e) => data.annotations[e.pandoraId]).filter(Boolean);
  const ctx = () => ({ pandoraId: id, name: data.name, href: `#/playlist/${encodeURIComponent(id)}` });

  /** One edit against the version this page shows: a stale version (another tab or device
   * changed the playlist) reloads it instead of applying the edit to an order it never saw.
   * Edits made here go one after another (two quick Alt+Down presses are two moves, the second
   * sent with the version the first answered), never two at once against one version. */
  let editing = Promise.resolve();
  let pending = 0; // edits made here and not yet answered: the page shows their order already
  function edit(body) {
    pending += 1;
    editing = editing.then(() => editNow(body));
    return editing;
  }

  async function editNow(body) {
    try {
      const answer = await api("v4/playlists/editTracks", { pandoraId: id, version: data.version, ...body });
      data.version = answer.version;
      pending -= 1;
      await load();
    } catch (err) {
      pending -= 1;
      if (err.code === "PLAYLIST_VERSION_MISMATCH") {
        toast("This playlist was changed elsewhere. It has been reloaded: try again.", "error", 8000);
      } else {
        toast(errorText(err), "error");
      }
      await load();
    }
  }

  function render() {
    heading.textContent = data.name;
    summary.textContent = `${data.totalTracks} ${data.totalTracks === 1 ? "track" : "tracks"} · ${formatTime(data.duration)}`;
    const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.closest("li") : null;
    const focusKey = focused && focused.dataset.key;
    const all = tracks();
    list.replaceChildren(...data.tracks.map((entry, i) => {
      const t = data.annotations[entry.pandoraId];
      if (!t) return h("li", { dataset: { key: String(entry.itemId) }, tabindex: 0 }, h("span.grow", h("strong", "Unavailable track")));
      const start = all.indexOf(t);
      return trackRow(t, {
        context: ctx(),
        attrs: { dataset: { key: String(entry.itemId), pandoraId: t.pandoraId }, tabindex: 0, draggable: "true", "aria-label": `${i + 1}. ${t.name}, ${t.artistName}` },
        onPlay: () => player.playOnDemand(all, ctx(), { start }),
        extra: [h("button.small", { type: "button", "aria-label": `Remove ${t.name} from the playlist`, onclick: () => edit({ deletes: [entry.itemId] }) }, "Remove")],
      });
    }));
    if (focusKey) {
      const again = list.querySelector(`li[data-key="${focusKey}"]`);
      if (again) again.focus();
    }
  }

  /** The playlist as the server has it, drawn unless edits made meanwhile are still on their way
   * (drawing it then would undo their moves on the page, and the next Alt+Up/Down would count
   * from that older order): the last of them loads it again. */
  async function load() {
    const answer = await api("v4/playlists/getTracks", { pandoraId: id, limit: MAX });
    if (pending > 0) return;
    data = answer;
    render();
  }

  reorderable(list, (key, to) => edit({ moves: [{ itemId: Number(key), toIndex: to }] }), say);

  try {
    const [answer, notes] = await Promise.all([api("v4/playlists/getTracks", { pandoraId: id, limit: MAX }), details([id])]);
    data = answer;
    note = notes[id] || { name: data.name, art: [] };
  } catch (err) {
    main.replaceChildren(h("h1", "Playlist"), errorBox(err));
    return;
  }
  art.replaceChildren(cover(note.art, 500, "", DRAWN.head));
  const rename = async () => {
    const name = await askName("Rename playlist", data.name, "Rename");
    if (!name) return;
    try {
      const answer = await api("v5/playlists/setDetails", { pandoraId: id, name, version: data.version });
      data.version = answer.version;
      await load();
      toast(`Renamed to “${name}”.`);
    } catch (err) {
      toast(err.code === "PLAYLIST_VERSION_MISMATCH" ? "This playlist was changed elsewhere. It has been reloaded: try again." : errorText(err), "error");
      await load();
    }
  };
  const remove = async () => {
    const sure = await dialog("Delete playlist", h("p", `Delete “${data.name}”? This cannot be undone.`), [["Cancel", false], ["Delete", true, "danger"]]);
    if (!sure) return;
    try {
      await api("v4/playlists/delete", { pandoraId: id });
      toast(`Deleted “${data.name}”.`);
      go("#/playlists");
    } catch (err) { toast(errorText(err), "error"); }
  };
  main.replaceChildren(
    h("div.page-head.station-head", art,
      h("div", h("p.muted.kind", "Playlist"), heading, note.description ? h("p", note.description) : "", summary,
        h("div.row.wrap",
          h("button.primary", { type: "button", onclick: () => player.playOnDemand(tracks(), ctx()) }, "Play"),
          h("button", { type: "button", onclick: () => player.playOnDemand(tracks(), ctx(), { shuffle: true }) }, "Shuffle"),
          h("button", { type: "button", onclick: rename }, "Rename"),
          h("button.danger", { type: "button", onclick: remove }, "Delete")))),
    h("p.muted.hint", { id: "move-hint" }, MOVE_HINT),
    say, list,
    h("p", h("a", { href: "#/library/browse" }, "Find music to add")));
  render();
}

// ---- Up next ------------------------------------------------------------------------------------------

/** The queue of on-demand playback in `section`: remove and reorder (drag, Alt+Up/Down); autoplay's
 * picks are marked. Returns the clean-up function. */
export function upNext(section) {
  const say = announcer();
  const list = h("ol.list.queue.reorder", { "aria-label": "Up next", "aria-describedby": "queue-hint" });
  const empty = h("p.muted", "Nothing queued: when this ends, autoplay plays music like it.");
  const clear = h("button.small", { type: "button", onclick: () => player.clearQueue() }, "Clear queue");
  section.replaceChildren(
    h("div.row.spread", h("h2", { id: "up-next-title" }, "Up next"), clear),
    h("p.muted.hint", { id: "queue-hint" }, MOVE_HINT.replace("track", "track of the queue")),
    say, list, empty);
  const render = () => {
    const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.closest("li") : null;
    const focusKey = focused && focused.dataset.key;
    const items = player.queue.slice(0, 100);
    list.replaceChildren(...items.map((item, i) => h("li.track-row", {
      dataset: { key: String(item.key), pandoraId: item.pandoraId }, tabindex: 0, draggable: "true",
      "aria-label": `${i + 1}. ${item.name}, ${item.artistName || ""}${item.autoplay ? " (autoplay)" : ""}`,
    },
    cover(item.art, 90, "", DRAWN.row),
    h("span.grow", h("strong", item.name), h("small", [item.artistName, item.albumName].filter(Boolean).join(" · "))),
    item.autoplay ? h("span.badge", "Autoplay") : "",
    h("button.small", { type: "button", "aria-label": `Remove ${item.name} from the queue`, onclick: () => player.removeFromQueue(item.key) }, "Remove"))));
    empty.hidden = items.length > 0;
    clear.disabled = !items.length;
    if (focusKey) {
      const again = list.querySelector(`li[data-key="${focusKey}"]`);
      if (again) again.focus();
    }
  };
  reorderable(list, (key, to) => player.moveInQueue(Number(key), to), say);
  const listener = (e) => { if (e.detail === "queue" || e.detail === "station") render(); };
  player.addEventListener("change", listener);
  render();
  return () => player.removeEventListener("change", listener);
}
