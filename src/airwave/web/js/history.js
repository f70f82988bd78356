// History: every track the listener heard, on stations and on demand, newest first, kept by the
// server (listener/getPlayHistory), so it lasts across reloads and devices. Loaded when opened.

import { api, session } from "./api.js";
import { player } from "./player.js";
import { cover, DRAWN, errorText, formatTime, h } from "./ui.js";
import { go, startStation } from "./views.js";

const PAGE = 50;

/** "Today", "Yesterday" or the date, for the day headings. */
function dayOf(date) {
  const start = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((start(new Date()) - start(date)) / 864e5);
  if (days === 0) return "Today";
  if (days === 1) return "Yesterday";
  return date.toLocaleDateString(undefined, { weekday: "long", day: "numeric", month: "long", year: "numeric" });
}

/** A history track in the shape the on-demand queue plays (a v4 annotation of a track). */
function noteOf(track) {
  const number = (id) => String(id || "").replace(/^\D+/, "");
  return {
    type: "TR",
    pandoraId: track.pandoraId,
    musicId: track.musicId,
    name: track.songTitle,
    artistName: track.artistName,
    albumName: track.albumTitle,
    art: track.albumArt || [],
    duration: track.trackLength,
    artistId: track.artistMusicId ? `AR:${number(track.artistMusicId)}` : "",
    albumId: track.albumMusicId ? `AL:${number(track.albumMusicId)}` : "",
  };
}

function entry(item) {
  const t = item.track;
  const when = new Date(item.playedAt);
  const where = item.stationId
    ? h("a", { href: `#/station/${encodeURIComponent(item.stationId)}` }, item.stationName || "A station")
    : item.onDemand ? "Your library" : "A station since deleted";
  const play = session.flags.onDemand
    ? h("button.small", {
      type: "button", "aria-label": `Play ${t.songTitle}`, disabled: !item.isAvailable,
      onclick: () => {
        const note = noteOf(t);
        const href = note.albumId ? `#/library/album/${encodeURIComponent(note.albumId)}` : "";
        player.playOnDemand([note], { pandoraId: note.pandoraId, name: note.name, href });
      },
    }, "Play")
    : h("button.small", {
      type: "button", "aria-label": `Start a station from ${t.songTitle}`, disabled: !item.isAvailable,
      onclick: () => startStation({ musicId: t.musicId, creationSource: "history" }),
    }, "Start station");
  return h("li.track-row", { dataset: { musicId: t.musicId } },
    cover(t.albumArt, 90, "", DRAWN.row),
    h("span.grow",
      h("strong", t.songTitle),
      h("small", [t.artistName, t.albumTitle].filter(Boolean).join(" · ")),
      h("small.where", where, item.outcome === "skipped" ? " · skipped" : "", item.isAvailable ? "" : " · no longer in the library")),
    h("time.time", { datetime: item.playedAt, title: when.toLocaleString() },
      when.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })),
    h("span.time.length", formatTime(t.trackLength)),
    play);
}

export async function historyView(main) {
  const title = h("h1", "History");
  const status = h("p.muted", { role: "status" });
  const days = h("div.history");
  const more = h("button", { type: "button", hidden: true }, "Show more");
  main.replaceChildren(title, status, h("p.loading", "Loading…"));
  let shown = 0;
  let total = 0;
  let lastDay = "";
  let list = null;
  const load = async () => {
    more.disabled = true;
    let page;
    try {
      page = await api("listener/getPlayHistory", { pageSize: PAGE, startIndex: shown });
    } catch (err) {
      main.replaceChildren(title, h("p.error", { role: "alert" }, errorText(err)));
      return false;
    }
    total = page.total || 0;
    for (const item of page.items || []) {
      const day = dayOf(new Date(item.playedAt));
      if (day !== lastDay || !list) {
        lastDay = day;
        const id = `day-${days.children.length}`;
        list = h("ol.list.history-day", { "aria-labelledby": id });
        days.append(h("section", h("h2", { id }, day), list));
      }
      list.append(entry(item));
    }
    shown += (page.items || []).length;
    more.hidden = shown >= total;
    more.disabled = false;
    status.textContent = total ? `${total} track${total === 1 ? "" : "s"} played` : "";
    return true;
  };
  more.addEventListener("click", load);
  if (!(await load())) return;
  if (!total) {
    main.replaceChildren(title, h("section.card.empty-state",
      h("h2", "Nothing played yet"),
      h("p", "Every track you hear, on a station or from your library, shows up here, newest first."),
      h("button.primary", { type: "button", onclick: () => go("#/stations") }, "Pick a station")));
    return;
  }
  main.replaceChildren(title, status, days, more);
}
