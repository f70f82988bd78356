// The screens of the player: each view fills <main> and may return a clean-up function.

import { api, session } from "./api.js";
import { formatsPlayable, isAd, player, preferredFormat, setPreferredFormat, trackTitle } from "./player.js";
import { artSrcset, artUrl, cover, debounce, dialog, DRAWN, errorText, field, formatTime, h, icon, toast } from "./ui.js";

const TYPE_NAMES = { artist: "Artist", track: "Song", genre: "Genre", album: "Album", station: "Station" };

/** The library on demand, loaded when first needed (it is not part of the first load). */
export function library() {
  return import("./library.js");
}

export function go(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

function heading(text, level = 1) {
  return h(`h${level}`, text);
}

function errorBox(err) {
  return h("p.error", { role: "alert" }, errorText(err));
}

/** Start a station from anything seedable, then show it playing. */
export async function startStation(body) {
  try {
    const station = await api("station/createStation", body);
    go("#/now");
    await player.play(station);
    return station;
  } catch (err) {
    toast(err.code === "MAX_STATIONS_REACHED" ? "You have as many stations as your plan allows. Delete one first." : errorText(err), "error");
    return null;
  }
}

// ---- search (combobox) -------------------------------------------------------------------------

/** An as-you-type search over fullSearch with a keyboard-navigable list of results. */
export function searchBox({ label, types, placeholder, onPick }) {
  const id = `sb-${Math.random().toString(36).slice(2, 8)}`;
  const list = h("ul.results", { id: `${id}-list`, role: "listbox", "aria-label": `${label}: results` });
  const input = h("input", {
    type: "search", id, role: "combobox", autocomplete: "off", placeholder: placeholder || "Artist, song or genre",
    "aria-autocomplete": "list", "aria-expanded": "false", "aria-controls": list.id,
  });
  const status = h("span.visually-hidden", { role: "status", "aria-live": "polite" });
  const empty = h("p.search-empty", { hidden: true });
  let items = [];
  let active = -1;
  let serial = 0;

  const close = () => {
    list.replaceChildren();
    empty.hidden = true;
    items = [];
    active = -1;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
  };
  const highlight = (i) => {
    active = i;
    list.querySelectorAll("[role=option]").forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
    if (i >= 0) {
      input.setAttribute("aria-activedescendant", `${id}-opt-${i}`);
      list.children[i].scrollIntoView({ block: "nearest" });
    } else input.removeAttribute("aria-activedescendant");
  };
  const pick = (item) => {
    close();
    input.value = "";
    onPick(item);
  };
  const run = debounce(async () => {
    const query = input.value.trim();
    const mine = ++serial;
    if (!query) return close();
    try {
      const answer = await api("search/fullSearch", { query, types, count: 8 });
      if (mine !== serial) return;
      items = answer.items || [];
      list.replaceChildren(...items.map((item, i) => h("li.result", {
        id: `${id}-opt-${i}`, role: "option", "aria-selected": "false",
        onmousedown: (e) => { e.preventDefault(); pick(item); },
      }, cover(item.art, 90, "", DRAWN.result), h("span.result-text", h("strong", item.name),
        h("small", [TYPE_NAMES[item.type] || item.type, item.artistName ? ` · ${item.artistName}` : ""])))));
      input.setAttribute("aria-expanded", String(items.length > 0));
      status.textContent = items.length ? `${items.length} results, use the arrow keys` : "No results";
      empty.textContent = `No results for “${query}”`;
      empty.hidden = items.length > 0;
      highlight(items.length ? 0 : -1);
    } catch (err) {
      if (mine === serial) status.textContent = errorText(err);
    }
  }, 150);

  input.addEventListener("input", run);
  input.addEventListener("blur", () => setTimeout(close, 150));
  input.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" && items.length) { e.preventDefault(); highlight((active + 1) % items.length); }
    else if (e.key === "ArrowUp" && items.length) { e.preventDefault(); highlight((active - 1 + items.length) % items.length); }
    else if (e.key === "Enter" && active >= 0) { e.preventDefault(); pick(items[active]); }
    else if (e.key === "Escape") close();
  });
  return h("div.search", field(label, input), status, list, empty);
}

// ---- sign-in and password reset ----------------------------------------------------------------

function signinMessage(err) {
  switch (err.code) {
    case "AUTH_INVALID_USERNAME_PASSWORD":
      return "Wrong username or password.";
    case "RATE_LIMITED": {
      const minutes = Math.max(1, Math.ceil((err.retryAfter || 60) / 60));
      return `Too many failed attempts. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`;
    }
    case "LISTENER_SUSPENDED":
      return "This account has been suspended. Ask the server's administrator.";
    default:
      return errorText(err);
  }
}

export function signinView(main, { onSignedIn }) {
  const user = h("input", { name: "username", autocomplete: "username", required: true, autocapitalize: "none" });
  const pass = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
  const keep = h("input", { type: "checkbox", name: "keep", id: "keep" });
  const message = h("p.error", { role: "alert", hidden: true });
  const submit = h("button.primary", { type: "submit" }, "Sign in");
  const form = h("form.card.narrow", {
    "aria-labelledby": "signin-title",
    onsubmit: async (e) => {
      e.preventDefault();
      message.hidden = true;
      submit.disabled = true;
      try {
        const listener = await api("auth/login", { username: user.value.trim(), password: pass.value, keepLoggedIn: keep.checked }, { auth: false });
        session.remember(listener.authToken, keep.checked);
        session.listener = listener;
        onSignedIn();
      } catch (err) {
        message.textContent = signinMessage(err);
        message.hidden = false;
        pass.select();
      } finally {
        submit.disabled = false;
      }
    },
  },
  h("h1", { id: "signin-title" }, "Sign in to Airwave"),
  field("Username", user), field("Password", pass),
  h("div.check", keep, h("label", { for: "keep" }, "Keep me logged in")),
  message, submit,
  h("p", h("a", { href: "#/forgot" }, "Forgot your password?")));
  main.replaceChildren(form);
  user.focus();
  offerOtherWays(form, { user, pass, keep, message, submit, onSignedIn });
}

/** "Create an account" and "Listen without an account", when the operator switched them on. */
async function offerOtherWays(form, { user, pass, keep, message, submit, onSignedIn }) {
  let enabled;
  try {
    const { endpoints } = await api("meta/getEndpoints", {}, { auth: false });
    enabled = new Set(endpoints.filter((e) => e.enabled !== false).map((e) => e.path));
  } catch (err) {
    return;
  }
  const start = (listener, keepIt) => {
    session.remember(listener.authToken, keepIt);
    session.listener = listener;
    onSignedIn();
  };
  const extra = h("div.other-ways");
  if (enabled.has("listener/register")) {
    extra.append(h("button.link", {
      type: "button",
      onclick: async () => {
        message.hidden = true;
        if (!user.value.trim() || !pass.value) {
          message.textContent = "Choose a username and a password above, then create the account.";
          message.hidden = false;
          user.focus();
          return;
        }
        submit.disabled = true;
        try {
          start(await api("listener/register", { username: user.value.trim(), password: pass.value, keepLoggedIn: keep.checked }, { auth: false }), keep.checked);
        } catch (err) {
          message.textContent = errorText(err);
          message.hidden = false;
        } finally {
          submit.disabled = false;
        }
      },
    }, "Create an account with this username and password"));
  }
  if (enabled.has("auth/anonymousLogin")) {
    extra.append(h("button.link", {
      type: "button",
      onclick: async () => {
        message.hidden = true;
        try {
          start(await api("auth/anonymousLogin", {}, { auth: false }), false);
        } catch (err) {
          message.textContent = errorText(err);
          message.hidden = false;
        }
      },
    }, "Listen without an account"));
  }
  if (extra.childElementCount && form.isConnected) form.append(extra);
}

export function forgotView(main) {
  const user = h("input", { name: "username", autocomplete: "username", required: true });
  const out = h("p", { role: "status" });
  main.replaceChildren(h("form.card.narrow", {
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("listener/emailPassword", { username: user.value.trim() }, { auth: false });
        out.textContent = "If that account has an email address, a reset link is on its way.";
      } catch (err) {
        out.textContent = errorText(err);
      }
    },
  }, heading("Reset your password"), field("Username", user), h("button.primary", { type: "submit" }, "Send reset link"), out,
  h("p", h("a", { href: "#/signin" }, "Back to sign-in"))));
}

export async function resetView(main, token) {
  const out = h("p", { role: "status" });
  main.replaceChildren(h("div.card.narrow", heading("Choose a new password"), out));
  try {
    await api("listener/validatePasswordResetToken", { token }, { auth: false });
  } catch (err) {
    out.textContent = "This reset link is invalid or has expired. Ask for a new one.";
    out.after(h("p", h("a", { href: "#/forgot" }, "Ask for a new link")));
    return;
  }
  const pw = h("input", { type: "password", autocomplete: "new-password", required: true, minlength: 8 });
  const again = h("input", { type: "password", autocomplete: "new-password", required: true });
  main.replaceChildren(h("form.card.narrow", {
    onsubmit: async (e) => {
      e.preventDefault();
      if (pw.value !== again.value) { out.textContent = "The two passwords differ."; return; }
      try {
        await api("listener/resetPassword", { token, newPassword: pw.value }, { auth: false });
        toast("Password changed. Sign in with the new one.");
        go("#/signin");
      } catch (err) {
        out.textContent = errorText(err);
      }
    },
  }, heading("Choose a new password"), field("New password", pw), field("Repeat it", again), out,
  h("button.primary", { type: "submit" }, "Set password")));
}

// ---- stations ----------------------------------------------------------------------------------

function stationCard(station) {
  return h("li.station", { dataset: { stationId: station.stationId } },
    h("button.station-play", {
      type: "button", "aria-label": `Play ${station.name}`,
      onclick: () => { go("#/now"); player.play(station); },
    }, cover(station.art, 130, "", DRAWN.tile)),
    h("div.station-meta",
      h("a.station-name", { href: `#/station/${encodeURIComponent(station.stationId)}` }, station.name),
      h("small", station.isShuffle ? "Shuffle" : station.isThumbprint ? "Thumbprint Radio" : station.lastPlayed ? `Played ${new Date(station.lastPlayed).toLocaleDateString()}` : "New")));
}

export async function stationsView(main) {
  const list = h("ul.stations", { "aria-label": "Your stations" });
  const filter = h("input", { type: "search", placeholder: "Filter by name" });
  const count = h("p.muted", { role: "status" });
  const recs = h("section.recs"); // named by its heading once it has one
  const thumbprint = h("button", { type: "button", onclick: async () => {
    try {
      const station = await api("station/createThumbprintStation", {});
      go("#/now");
      player.play(station);
    } catch (err) {
      toast(err.code === "THUMBPRINT_RADIO_NOT_ELIGIBLE" ? "Thumbprint Radio needs at least 15 thumbs-up. Keep rating tracks." : errorText(err), "error");
    }
  } }, "Thumbprint Radio");
  // how far a listener is from Thumbprint Radio: a line of its own, there from the start, so that
  // the answer filling it moves none of the buttons above (the row is right-aligned: text added
  // to it slid Shuffle from under a pointer that was about to click it)
  const hint = h("small.hint.head-note", { id: "tp-hint" });
  main.replaceChildren(
    h("div.page-head", heading("Stations"),
      h("div.row",
        h("button", { type: "button", onclick: async () => {
          try {
            const station = await api("station/shuffle", {});
            go("#/now");
            player.play(station);
          } catch (err) { toast(errorText(err), "error"); }
        } }, "Shuffle"),
        thumbprint,
        h("a.button", { href: "#/genres" }, "Browse genres")),
      hint),
    h("section.card", { "aria-labelledby": "create-title" }, h("h2", { id: "create-title" }, "Create a station"),
      searchBox({ label: "Search artists, songs and genres", types: ["AR", "TR", "GE"], onPick: (item) => startStation({ musicId: item.musicId, searchQuery: item.name, creationSource: "search" }) })),
    h("section", { "aria-labelledby": "mine-title" },
      h("div.row.spread", h("h2", { id: "mine-title" }, "Your stations"), field("Filter stations", filter)), count, list),
    recs);
  let stations = [];
  const render = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = stations.filter((s) => !q || s.name.toLowerCase().includes(q));
    list.replaceChildren(...shown.map(stationCard));
    count.textContent = stations.length ? `${shown.length} of ${stations.length} stations` : "No stations yet: search above to create one.";
  };
  filter.addEventListener("input", render);
  try {
    const answer = await api("station/getStations", { pageSize: 1000 });
    stations = answer.stations || [];
    render();
  } catch (err) {
    list.replaceWith(errorBox(err));
  }
  api("listener/getProfile", {}).then((p) => {
    if (typeof p.thumbsUpCount === "number" && p.thumbsUpCount < 15) {
      thumbprint.setAttribute("aria-describedby", "tp-hint");
      hint.textContent = `Thumbprint Radio: ${p.thumbsUpCount}/15 thumbs-up`;
    }
  }).catch(() => {});
  try {
    const r = await api("search/getStationRecommendations", {});
    const items = [
      ...(r.artists || []).map((a) => ({ name: a.name, art: a.art, musicId: a.musicId, kind: "Artist" })),
      ...(r.genreStations || []).map((g) => ({ name: g.stationName || g.name, art: g.art, musicId: g.musicId, kind: "Genre" })),
    ].slice(0, 12);
    if (items.length) {
      recs.setAttribute("aria-labelledby", "recs-title");
      recs.replaceChildren(h("h2", { id: "recs-title" }, "Recommended for you"),
        h("ul.tiles", items.map((item) => h("li.tile", cover(item.art, 130, "", DRAWN.tile),
          h("strong", item.name), h("small", item.kind),
          h("button.small", { type: "button", "aria-label": `Start ${item.name} station`, onclick: () => startStation({ musicId: item.musicId, creationSource: "recommendation" }) }, "Start")))));
    }
  } catch (err) { /* recommendations are optional */ }
}

export async function genresView(main, token) {
  main.replaceChildren(heading("Genres"), h("p.loading", "Loading…"));
  try {
    const cats = (await api("music/genrecategories", {})).categories || [];
    const nav = h("ul.chips", { "aria-label": "Genre categories" }, cats.map((c) => h("li", h("a.chip", {
      href: `#/genres/${encodeURIComponent(c.token)}`, "aria-current": c.token === token ? "page" : null,
    }, c.name))));
    const body = h("div");
    main.replaceChildren(heading("Genres"), nav, body);
    const chosen = token || (cats[0] && cats[0].token);
    if (!chosen) { body.append(h("p", "The library has no genres yet.")); return; }
    const answer = await api("music/genres", { token: chosen });
    body.append(h("h2", answer.category || ""), h("ul.tiles", (answer.stations || []).map((s) => h("li.tile",
      cover(s.art, 130, "", DRAWN.tile), h("strong", s.stationName || s.name),
      h("small", (s.sampleTracks || []).slice(0, 3).map((t) => t.artistName).filter((v, i, a) => a.indexOf(v) === i).join(", ")),
      h("button.small", { type: "button", "aria-label": `Start ${s.stationName || s.name}`, onclick: () => startStation({ musicId: s.musicId, creationSource: "genre" }) }, "Start")))));
  } catch (err) {
    main.append(errorBox(err));
  }
}

function seedLabel(seed) {
  if (seed.artist) return { name: seed.artist.artistName, kind: "Artist" };
  if (seed.song) return { name: `${seed.song.songTitle} by ${seed.song.artistSummary}`, kind: "Song" };
  if (seed.genre) return { name: seed.genre.stationName, kind: "Genre" };
  return { name: seed.musicId, kind: "" };
}

export async function stationView(main, stationId) {
  main.replaceChildren(h("p.loading", "Loading…"));
  let st;
  try {
    st = await api("station/getStationDetails", { stationId });
  } catch (err) {
    main.replaceChildren(heading("Station"), errorBox(err), h("a", { href: "#/stations" }, "Back to stations"));
    return;
  }
  const title = h("h1", st.name);
  const parts = [h("div.page-head.station-head", cover(st.art, 130, "", DRAWN.head), h("div", title,
    h("p.muted", (st.genre || []).join(", ")),
    h("div.row", h("button.primary", { type: "button", onclick: () => { go("#/now"); player.play(st); } }, "Play station"))))];

  if (st.allowRename || st.allowEditDescription) {
    const name = h("input", { value: st.name, maxlength: 64, required: true, disabled: !st.allowRename });
    const desc = h("textarea", { rows: 3, maxlength: 4000, disabled: !st.allowEditDescription });
    desc.value = st.description || "";
    const out = h("p", { role: "status" });
    parts.push(h("form.card", {
      "aria-label": "Name and description",
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          const body = { stationId };
          if (st.allowRename) body.name = name.value.trim();
          if (st.allowEditDescription) body.description = desc.value;
          const updated = await api("station/updateStation", body);
          title.textContent = updated.name;
          if (player.station && player.station.stationId === stationId) player.station.name = updated.name;
          out.textContent = "Saved.";
          toast("Station saved.");
        } catch (err) { out.textContent = errorText(err); }
      },
    }, h("h2", "Name and description"), field("Station name", name), field("Description", desc), out,
    h("button", { type: "submit" }, "Save")));
  }

  if (st.isShuffle) {
    const all = (await api("station/getStations", { pageSize: 1000 })).stations.filter((s) => !s.isShuffle && s.canShuffleStation !== false);
    const chosen = new Set(st.shuffleStationIds || []);
    const boxes = all.map((s) => {
      const box = h("input", { type: "checkbox", value: s.stationId, checked: chosen.has(s.stationId), id: `sh-${s.stationId}` });
      return h("li.check", box, h("label", { for: box.id }, s.name));
    });
    parts.push(h("form.card", {
      "aria-label": "Stations in shuffle",
      onsubmit: async (e) => {
        e.preventDefault();
        const ids = [...e.target.querySelectorAll("input:checked")].map((b) => b.value);
        try {
          await api("station/updateShuffleStation", { stationIds: ids });
          toast("Shuffle updated.");
        } catch (err) { toast(errorText(err), "error"); }
      },
    }, h("h2", "Stations in shuffle"), h("ul.plain", boxes), h("button", { type: "submit" }, "Save selection")));
  }

  if (!st.isShuffle) {
    const seedList = h("ul.list", { "aria-label": "Seeds" });
    const renderSeeds = (seeds) => seedList.replaceChildren(...seeds.map((seed) => {
      const { name, kind } = seedLabel(seed);
      return h("li", cover(seed.art, 90, "", DRAWN.row), h("span.grow", h("strong", name), h("small", kind)),
        h("button.small", { type: "button", "aria-label": `Remove seed ${name}`, disabled: seeds.length < 2, onclick: async () => {
          try {
            await api("station/deleteSeed", { stationId, musicId: seed.musicId });
            st.seeds = st.seeds.filter((s) => s !== seed);
            renderSeeds(st.seeds);
          } catch (err) { toast(errorText(err), "error"); }
        } }, "Remove"));
    }));
    renderSeeds(st.seeds || []);
    const addSeed = async (musicId) => {
      try {
        const seed = await api("station/addSeed", { stationId, musicId });
        st.seeds = [...(st.seeds || []), seed];
        renderSeeds(st.seeds);
        toast("Seed added.");
      } catch (err) { toast(errorText(err), "error"); }
    };
    const suggestions = h("ul.chips", { "aria-label": "Suggested seeds" });
    parts.push(h("section.card", { "aria-labelledby": "seeds-title" }, h("h2", { id: "seeds-title" }, "Seeds"), seedList,
      st.allowAddSeed !== false ? searchBox({ label: "Add a seed", types: ["AR", "TR", "GE"], onPick: (item) => addSeed(item.musicId) }) : null,
      suggestions));
    if (st.allowAddSeed !== false) {
      api("search/getSeedSuggestions", { stationId, maxResults: 6 }).then((r) => {
        suggestions.replaceChildren(...(Array.isArray(r) ? r : []).map((a) => h("li", h("button.chip", { type: "button", "aria-label": `Add seed ${a.name}`, onclick: () => addSeed(a.musicId) }, `+ ${a.name}`))));
      }).catch(() => {});
    }
    for (const positive of [true, false]) {
      const list = h("ul.list");
      const label = positive ? "Thumbs up" : "Thumbs down";
      const sec = h("section.card", { "aria-label": label }, h("h2", `${label} (${positive ? st.positiveFeedbackCount : st.negativeFeedbackCount})`), list);
      parts.push(sec);
      api("station/getStationFeedback", { stationId, positive, pageSize: 100 }).then((r) => {
        const rows = r.feedback || [];
        if (!rows.length) list.replaceChildren(h("li.muted", positive ? "No thumbs-up yet." : "No thumbs-down yet."));
        else list.replaceChildren(...rows.map((f) => h("li", cover(f.albumArt, 90, "", DRAWN.row), h("span.grow", h("strong", f.songTitle), h("small", f.artistName)),
          h("button.small", { type: "button", "aria-label": `Remove ${label.toLowerCase()} for ${f.songTitle}`, onclick: async (e) => {
            try {
              await api("station/deleteFeedback", { feedbackId: f.feedbackId });
              e.target.closest("li").remove();
            } catch (err) { toast(errorText(err), "error"); }
          } }, "Remove"))));
      }).catch((err) => list.replaceChildren(h("li.error", errorText(err))));
    }
  }

  if (st.allowDelete) {
    parts.push(h("section.card.danger", { "aria-labelledby": "del-title" }, h("h2", { id: "del-title" }, "Delete station"),
      h("button.danger", { type: "button", onclick: async () => {
        const ok = await dialog("Delete this station?", h("p", `“${st.name}” and its thumbs will be gone for good.`),
          [["Cancel", false], ["Delete station", true, "danger"]]);
        if (!ok) return;
        try {
          await api("station/removeStation", { stationId });
          if (player.station && player.station.stationId === stationId) player.stop();
          toast("Station deleted.");
          go("#/stations");
        } catch (err) { toast(errorText(err), "error"); }
      } }, "Delete station")));
  }
  main.replaceChildren(parts[0], h("div.grid2", parts.slice(1)));
}

// ---- now playing -------------------------------------------------------------------------------

function iconButton(label, name, onclick, extra = {}) {
  return h("button.icon", { type: "button", "aria-label": label, title: label, onclick, ...extra }, icon(name));
}

/** Controls bound to the player, used by the now-playing screen and the bar at the bottom. */
export function controls(compact) {
  const playBtn = iconButton("Play", "play", () => player.toggle(), { className: "icon play" });
  const skipBtn = iconButton("Skip", "skip", () => player.skip());
  const up = iconButton("Thumbs up", "up", () => player.thumbUp(), { "aria-pressed": "false" });
  const down = iconButton("Thumbs down", "down", () => player.thumbDown());
  // the player bar (compact) keeps the thumbs too: on a phone it is where a listener rates
  const el = h(compact ? "div.controls.compact" : "div.controls", [down, playBtn, skipBtn, up]);
  const update = () => {
    const t = player.current;
    const paused = !t || player.audio.paused;
    if (playBtn.dataset.icon !== String(paused)) {
      playBtn.replaceChildren(icon(paused ? "play" : "pause"));
      playBtn.dataset.icon = String(paused);
    }
    playBtn.setAttribute("aria-label", paused ? "Play" : "Pause");
    playBtn.title = paused ? "Play" : "Pause";
    playBtn.disabled = !player.tuned;
    skipBtn.disabled = player.context ? !t && !player.queue.length : !t || isAd(t);
    const canRate = !!t && !isAd(t) && t.allowFeedback !== false;
    up.disabled = !canRate;
    down.disabled = !canRate;
    up.setAttribute("aria-pressed", String(!!t && t.rating === 1));
  };
  return { el, update };
}

/** Mute button and volume slider (the keyboard: m, + and -). */
function volumeControl() {
  const mute = h("button.icon.mute", { type: "button", "aria-pressed": "false", onclick: () => player.toggleMute() });
  const slider = h("input.volume", { type: "range", min: 0, max: 100, step: 5, "aria-label": "Volume", oninput: (e) => player.setVolume(e.target.value / 100) });
  const el = h("div.sound", mute, slider);
  const update = () => {
    const silent = player.muted || player.volume === 0;
    if (mute.dataset.icon !== String(silent)) {
      mute.replaceChildren(icon(silent ? "muted" : "volume"));
      mute.dataset.icon = String(silent);
    }
    mute.setAttribute("aria-label", "Mute");
    mute.title = player.muted ? "Unmute (m)" : "Mute (m)";
    mute.setAttribute("aria-pressed", String(player.muted));
    const value = String(Math.round((player.muted ? 0 : player.volume) * 100));
    if (slider.value !== value) slider.value = value;
    slider.setAttribute("aria-valuetext", player.muted ? "muted" : `${value}%`);
  };
  update();
  return { el, update };
}

/** The track's progress; on-demand tracks get a slider that seeks (radio does not seek). */
function progress() {
  const bar = h("progress", { max: 100, value: 0, "aria-label": "Track progress" });
  const seek = h("input.seek", { type: "range", min: 0, max: 1, step: 1, value: 0, "aria-label": "Seek", hidden: true,
    oninput: () => { seeking = true; }, onchange: () => { seeking = false; player.seekTo(Number(seek.value)); } });
  let seeking = false;
  const now = h("span.time", "0:00");
  const total = h("span.time", "0:00");
  const el = h("div.progress", now, bar, seek, total);
  const update = () => {
    const a = player.audio;
    const length = (isFinite(a.duration) && a.duration) || (player.current && player.current.trackLength) || 0;
    const at = player.current ? Math.min(a.currentTime, length || 0) : 0;
    bar.max = length || 1;
    bar.value = at;
    seek.hidden = !player.canSeek;
    // a transcode still being made streams without byte ranges: it seeks once it is whole
    seek.disabled = !(a.seekable && a.seekable.length);
    bar.hidden = !seek.hidden;
    if (!seek.hidden && !seeking) {
      seek.max = String(Math.max(1, Math.floor(length)));
      seek.value = String(Math.floor(at));
      seek.setAttribute("aria-valuetext", `${formatTime(at)} of ${formatTime(length)}`);
    }
    now.textContent = formatTime(player.current ? a.currentTime : 0);
    total.textContent = formatTime(length);
  };
  return { el, update };
}

/** An <a> that links to `href`, or is plain text when there is nowhere to go. */
function linkTo(a, href) {
  if (href) a.href = href;
  else a.removeAttribute("href");
}

/** What on-demand playback plays from, in words: "album", "playlist" ... */
function contextKind(context) {
  const kinds = { AL: "album", PL: "playlist", AR: "artist", TR: "song", GE: "genre" };
  return kinds[String(context.pandoraId || "").split(":")[0]] || "your library";
}

/** The now-playing screen: the cover first and large (a wash of its colours behind the page),
 * then what plays and where from, its progress (a seek slider on demand), the controls (thumbs
 * for radio and autoplay), the track's other actions, Up next and what played before. */
export function nowView(main) {
  const backdrop = h("div.now-backdrop", { "aria-hidden": "true" });
  const art = h("img.cover.big", { alt: "", width: 500, height: 500, sizes: DRAWN.now });
  const artEmpty = h("div.cover.big.cover-empty", icon("note"));
  const title = h("h1.track-title");
  const artistLink = h("a");
  const albumLink = h("a");
  const stationLink = h("a");
  const fromKind = h("span.from-kind");
  const adLink = h("a", { target: "_blank", rel: "noopener noreferrer" }, "Learn more about this ad");
  const ctl = controls(false);
  const prog = progress();
  const sound = volumeControl();
  const skips = h("p.muted.skips", { role: "status" });
  const message = h("p.message", { role: "status", "aria-live": "polite" });
  const tiredBtn = h("button", { type: "button", onclick: () => player.tired() }, "Tired of this track");
  const bmTrack = h("button", { type: "button", onclick: () => bookmark("track") }, "Bookmark track");
  const bmArtist = h("button", { type: "button", onclick: () => bookmark("artist") }, "Bookmark artist");
  const replayBtn = h("button", { type: "button", onclick: () => player.replay(player.history[player.history.length - 1]) }, "Replay previous");
  const addBtn = h("button", { type: "button", onclick: () => library().then((m) => m.addToPlaylist([player.current.pandoraId])) }, "Add to playlist");
  const upNext = h("section.up-next", { "aria-labelledby": "up-next-title", hidden: true });
  const whyBtn = h("button", { type: "button", "aria-expanded": "false", "aria-controls": "why", onclick: () => why() }, "Why this track?");
  const lyricsBtn = h("button", { type: "button", "aria-expanded": "false", "aria-controls": "lyrics", onclick: () => lyrics() }, "Lyrics");
  const whyBox = h("section.card.panel", { id: "why", hidden: true, "aria-label": "Why this track" });
  const lyricsBox = h("section.card.panel", { id: "lyrics", hidden: true, "aria-label": "Lyrics" });
  const recent = h("ol.list.recent", { "aria-label": "Recently played" });
  const empty = h("div.card", h("p", "Nothing is playing."), h("a.button.primary", { href: "#/stations" }, "Pick a station"));
  const byline = h("p.track-byline", h("span.track-artist", artistLink), h("span.sep", { "aria-hidden": "true" }, "·"), h("span.track-album", albumLink));
  const stage = h("div.now",
    h("div.now-art", art, artEmpty),
    h("div.now-info",
      h("p.now-from", fromKind, " ", stationLink),
      title,
      byline, adLink,
      prog.el,
      h("div.now-controls", ctl.el, sound.el),
      skips, message,
      h("div.row.wrap.now-actions", tiredBtn, bmTrack, bmArtist, replayBtn, addBtn, whyBtn, lyricsBtn),
      whyBox, lyricsBox));
  main.replaceChildren(h("div", { id: "now" }, backdrop, stage, empty, h("div.now-lists", upNext, h("section.recently", { "aria-labelledby": "recent-title" }, h("h2", { id: "recent-title" }, "Recently played"), recent,
    h("p", h("a", { href: "#/history" }, "Everything you played"))))));
  let shownTrack; // undefined: the first update shows the state, even "no track"
  let queueShown = null; // the Up next list, while on-demand music plays
  let gone = false;

  async function bookmark(type) {
    const t = player.current;
    if (!t || !t.trackToken) return;
    try {
      await api("bookmark/add", type === "artist" ? { trackToken: t.trackToken, type: "artist" } : { trackToken: t.trackToken });
      if (type === "track") t.isBookmarked = true;
      toast(type === "artist" ? `Bookmarked ${t.artistName}.` : `Bookmarked “${trackTitle(t)}”.`);
      update("state");
    } catch (err) { toast(errorText(err), "error"); }
  }

  async function why() {
    const open = whyBox.hidden;
    whyBox.hidden = !open;
    whyBtn.setAttribute("aria-expanded", String(open));
    const t = player.current;
    if (!open || !t) return;
    whyBox.replaceChildren(h("h2", "Why this track"), h("p.loading", "Loading…"));
    try {
      const d = await api("music/track", { token: t.musicId });
      const traits = d.focusTraits || [];
      whyBox.replaceChildren(h("h2", "Why this track"),
        traits.length ? h("ul", traits.map((x) => h("li", x))) : h("p", "It sounds like the seeds of this station."));
    } catch (err) { whyBox.replaceChildren(h("h2", "Why this track"), errorBox(err)); }
  }

  async function lyrics() {
    const open = lyricsBox.hidden;
    lyricsBox.hidden = !open;
    lyricsBtn.setAttribute("aria-expanded", String(open));
    const t = player.current;
    if (!open || !t) return;
    lyricsBox.replaceChildren(h("h2", "Lyrics"), h("p.loading", "Loading…"));
    try {
      const body = { trackUid: t.musicId };
      if (t.lyricSnippet) Object.assign(body, { lyricId: t.lyricSnippet.lyricId, checksum: t.lyricSnippet.checksum });
      const l = await api("music/fullLyrics", body);
      if (player.current !== t) return; // the track changed while they loaded
      const timed = l.syncedLines || [];
      // timed lyrics follow the music: the line being sung is highlighted and kept in view
      const lines = timed.length
        ? timed.map((line) => h("p", { dataset: { time: line.time } }, line.text))
        : (l.lines || []).map((line) => h("p", line));
      const box = h(`div.lyrics${timed.length ? ".synced" : ""}`, lines);
      synced = timed.length ? { track: t, box, lines, at: -1 } : null;
      // replaceChildren writes a null argument as the text "null": leave absent credits out
      lyricsBox.replaceChildren(h("h2", "Lyrics"), box, ...(l.credits ? [h("small", l.credits)] : []));
      followLyrics();
    } catch (err) {
      lyricsBox.replaceChildren(h("h2", "Lyrics"), h("p", err.code === "NOT_FOUND" ? "No lyrics for this track." : errorText(err)));
    }
  }

  let synced = null; // the open panel's timed lines, while their track plays

  function followLyrics() {
    if (!synced || synced.track !== player.current || lyricsBox.hidden) return;
    const time = player.audio.currentTime;
    let at = -1;
    for (let i = 0; i < synced.lines.length && Number(synced.lines[i].dataset.time) <= time; i++) at = i;
    if (at === synced.at) return;
    if (synced.at >= 0) synced.lines[synced.at].removeAttribute("aria-current");
    synced.at = at;
    if (at < 0) return;
    const line = synced.lines[at];
    line.setAttribute("aria-current", "true");
    // scroll the panel, not the page
    synced.box.scrollTop = line.offsetTop - synced.box.clientHeight / 2 + line.offsetHeight / 2;
  }

  function update(kind) {
    const t = player.current;
    prog.update();
    followLyrics();
    if (kind === "time") return;
    ctl.update();
    sound.update();
    const hasTrack = !!t;
    stage.hidden = !hasTrack && !player.tuned;
    empty.hidden = !stage.hidden;
    if (player.station) {
      fromKind.textContent = "Playing from station";
      stationLink.textContent = player.station.name;
      stationLink.href = `#/station/${encodeURIComponent(player.station.stationId)}`;
    } else if (player.context) {
      fromKind.textContent = `Playing from ${contextKind(player.context)}`;
      stationLink.textContent = player.context.name;
      linkTo(stationLink, player.context.href);
    }
    upNext.hidden = !player.context;
    if (player.context && !queueShown) {
      queueShown = true;
      library().then((m) => { queueShown = gone ? true : m.upNext(upNext); });
    }
    const ad = isAd(t);
    if (t !== shownTrack) {
      shownTrack = t;
      whyBox.hidden = true;
      lyricsBox.hidden = true;
      whyBtn.setAttribute("aria-expanded", "false");
      lyricsBtn.setAttribute("aria-expanded", "false");
      const url = t ? artUrl(t.albumArt || t.art || t.artistArt, 500) : "";
      art.hidden = !url;
      artEmpty.hidden = !!url || !t; // no track: no cover box at all
      if (url) {
        art.srcset = artSrcset(t.albumArt || t.art || t.artistArt);
        art.src = url;
        art.alt = t.albumTitle ? `Cover of ${t.albumTitle}` : "";
      }
      // the wash behind the screen: the smallest cover, blurred (it costs a few kilobytes)
      const wash = t ? artUrl(t.albumArt || t.art || t.artistArt, 90) : "";
      backdrop.style.backgroundImage = wash ? `url("${wash}")` : "";
      backdrop.hidden = !wash;
      title.textContent = t ? trackTitle(t) : player.loading ? "Tuning in…" : "";
      title.dataset.musicId = t ? t.musicId || "" : "";
      // during an ad (or with no track) these are plain text, not links to nowhere
      artistLink.textContent = t ? (ad ? "Advertisement" : t.artistName) : "";
      linkTo(artistLink, t && !ad ? t.artistHref || `#/artist/${encodeURIComponent(t.artistMusicId || t.artistSeoToken)}` : null);
      albumLink.textContent = t && !ad ? t.albumTitle : "";
      byline.classList.toggle("single", !albumLink.textContent);
      linkTo(albumLink, t && !ad ? t.albumHref || (t.albumSeoToken ? `#/album/${encodeURIComponent(t.albumSeoToken)}` : null) : null);
      const click = ad ? t.clickThroughUrl || t.songDetailURL : "";
      adLink.hidden = !click;
      if (click) adLink.href = click;
      // this page's plays (replayable); before any, the last ones the server kept (History)
      if (player.history.length || !heardBefore) {
        recent.replaceChildren(...player.history.slice(-8).reverse().filter((x) => !isAd(x)).map((x) => h("li",
          cover(x.albumArt, 90, "", DRAWN.row), h("span.grow", h("strong", trackTitle(x)), h("small", x.artistName)),
          session.flags.replaysEnabled && player.station && x.stationId === player.station.stationId ? h("button.small", { type: "button", "aria-label": `Replay ${trackTitle(x)}`, onclick: () => player.replay(x) }, "Replay") : null)));
      }
    }
    const rate = !!t && !ad;
    tiredBtn.disabled = !rate || t.allowTiredOfTrack === false;
    bmTrack.disabled = !rate;
    bmArtist.disabled = !rate;
    addBtn.hidden = !session.flags.onDemand;
    addBtn.disabled = !rate || !/^TR:/.test(t.pandoraId || "");
    bmTrack.textContent = t && t.isBookmarked ? "Bookmarked" : "Bookmark track";
    whyBtn.disabled = !rate;
    lyricsBtn.disabled = !rate || !t.lyricSnippet;
    replayBtn.hidden = !session.flags.replaysEnabled || !!player.context; // replays are radio's
    replayBtn.disabled = !player.history.filter((x) => !isAd(x)).length;
    const left = player.skipsLeft();
    skips.textContent = left === null ? "" : `${left} skip${left === 1 ? "" : "s"} left`;
    message.textContent = player.message;
  }
  let heardBefore = false;
  if (!player.history.length) {
    api("listener/getPlayHistory", { pageSize: 8 }).then((page) => {
      if (gone || player.history.length) return;
      heardBefore = true;
      recent.replaceChildren(...(page.items || []).map((x) => h("li",
        cover(x.track.albumArt, 90, "", DRAWN.row),
        h("span.grow", h("strong", x.track.songTitle), h("small", x.track.artistName)))));
    }).catch(() => {});
  }
  const listener = (e) => update(e.detail);
  player.addEventListener("change", listener);
  update("track");
  return () => {
    player.removeEventListener("change", listener);
    gone = true;
    if (typeof queueShown === "function") queueShown();
  };
}

/** The bar at the foot of every screen while a station is on. */
export function playerBar(bar) {
  const art = h("img.cover.mini", { alt: "", width: 56, height: 56, sizes: DRAWN.bar });
  const title = h("a.bar-title", { href: "#/now" });
  const sub = h("small.bar-sub");
  const ctl = controls(true);
  const prog = progress();
  const sound = volumeControl();
  // the cover and the expand button open the now-playing screen (the title does too)
  const artLink = h("a.bar-art", { href: "#/now", tabindex: -1, "aria-hidden": "true" }, art);
  const expand = h("a.button.icon.expand", { href: "#/now", "aria-label": "Expand the player", title: "Expand the player" }, icon("expand"));
  bar.replaceChildren(artLink, h("div.bar-text", title, sub), prog.el, h("div.bar-end", ctl.el, sound.el, expand));
  const update = (kind) => {
    prog.update();
    if (kind === "time") return;
    ctl.update();
    sound.update();
    const t = player.current;
    bar.hidden = !player.tuned || !session.token;
    const url = t ? artUrl(t.albumArt || t.art, 90) : "";
    art.hidden = !url;
    if (url && art.getAttribute("src") !== url) {
      art.srcset = artSrcset(t.albumArt || t.art);
      art.src = url;
    }
    title.textContent = t ? trackTitle(t) : player.station ? player.station.name : player.context ? player.context.name : "";
    sub.textContent = t ? (isAd(t) ? "Advertisement" : t.artistName) : "";
  };
  player.addEventListener("change", (e) => update(e.detail));
  update("track");
  return update;
}

// ---- artist and album --------------------------------------------------------------------------

export async function artistView(main, token) {
  main.replaceChildren(h("p.loading", "Loading…"));
  try {
    const a = await api("music/artist", { token });
    const bm = h("button", { type: "button", "aria-pressed": String(!!a.isBookmarked), onclick: async () => {
      try {
        await api("bookmark/add", { musicId: a.musicId });
        bm.setAttribute("aria-pressed", "true");
        bm.textContent = "Bookmarked";
      } catch (err) { toast(errorText(err), "error"); }
    } }, a.isBookmarked ? "Bookmarked" : "Bookmark artist");
    main.replaceChildren(
      h("div.page-head.station-head", cover(a.art, 130, a.name, DRAWN.head), h("div", heading(a.name),
        h("p.muted", [(a.genre || []).join(", "), a.listenerCount ? ` · ${a.listenerCount} listeners` : ""]),
        a.bio ? h("p", a.bio) : null,
        h("div.row", h("button.primary", { type: "button", onclick: () => startStation({ musicId: a.musicId, creationSource: "artist" }) }, "Start station"), bm))),
      h("section", { "aria-labelledby": "disco" }, h("h2", { id: "disco" }, "Discography"),
        h("ul.tiles", [...(a.discography || []), ...(a.appearsOn || [])].map((al) => h("li.tile",
          h("a", { href: `#/album/${encodeURIComponent(al.musicId)}` }, cover(al.art, 130, "", DRAWN.tile), h("strong", al.name)),
          h("small", al.year || ""))))),
      h("section", { "aria-labelledby": "similar" }, h("h2", { id: "similar" }, "Similar artists"),
        h("ul.chips", (a.similar || []).map((s) => h("li", h("a.chip", { href: `#/artist/${encodeURIComponent(s.musicId)}` }, s.name))))));
  } catch (err) {
    main.replaceChildren(heading("Artist"), errorBox(err));
  }
}

export async function albumView(main, token) {
  main.replaceChildren(h("p.loading", "Loading…"));
  try {
    const al = await api("music/album", { token });
    main.replaceChildren(
      h("div.page-head.station-head", cover(al.art, 130, `Cover of ${al.name}`, DRAWN.head), h("div", heading(al.name),
        h("p", h("a", { href: `#/artist/${encodeURIComponent(al.artistMusicId)}` }, al.artistName), al.year ? ` · ${al.year}` : ""),
        h("p.muted", `${al.trackCount} tracks · ${formatTime(al.duration)}`))),
      h("ol.list", { "aria-label": "Tracks" }, (al.tracks || []).map((t) => h("li",
        h("span.grow", h("strong", t.songTitle || t.name), h("small", t.artistName)),
        h("span.time", formatTime(t.trackLength)),
        h("button.small", { type: "button", "aria-label": `Start station from ${t.songTitle || t.name}`, onclick: () => startStation({ musicId: t.musicId, creationSource: "album" }) }, "Start station")))));
  } catch (err) {
    main.replaceChildren(heading("Album"), errorBox(err));
  }
}

// ---- bookmarks ---------------------------------------------------------------------------------

export async function bookmarksView(main) {
  main.replaceChildren(heading("Bookmarks"), h("p.loading", "Loading…"));
  let data;
  try {
    data = await api("bookmark/getBookmarks", { pageSize: 200 });
  } catch (err) {
    main.replaceChildren(heading("Bookmarks"), errorBox(err));
    return;
  }
  const counts = { track: data.totalTracks || 0, artist: data.totalArtists || 0 };
  const tracksTitle = h("h2", { id: "bm-tracks" });
  const artistsTitle = h("h2", { id: "bm-artists" });
  const tracksEmpty = h("p.muted", "Bookmark a track from the now-playing screen.");
  const artistsEmpty = h("p.muted", "No artists bookmarked yet.");
  const tracks = h("ul.list", { "aria-label": "Bookmarked tracks" });
  const artistsList = h("ul.list", { "aria-label": "Bookmarked artists" });
  const show = () => {
    tracksTitle.textContent = `Tracks (${counts.track})`;
    artistsTitle.textContent = `Artists (${counts.artist})`;
    tracks.hidden = !tracks.children.length;
    tracksEmpty.hidden = !tracks.hidden;
    artistsList.hidden = !artistsList.children.length;
    artistsEmpty.hidden = !artistsList.hidden;
  };
  const row = (b) => h("li", { dataset: { bookmarkId: b.bookmarkId } }, cover(b.art, 90, "", DRAWN.row),
    h("span.grow",
      b.type === "artist" ? h("a", { href: `#/artist/${encodeURIComponent(b.musicId)}` }, h("strong", b.name)) : h("strong", b.songTitle || b.name),
      h("small", b.type === "artist" ? "Artist" : `${b.artistName}${b.albumTitle ? " · " + b.albumTitle : ""}`)),
    h("button.small", { type: "button", "aria-label": `Start station from ${b.name}`, onclick: () => startStation({ musicId: b.musicId, creationSource: "bookmark" }) }, "Start station"),
    h("button.small", { type: "button", "aria-label": `Remove bookmark ${b.name}`, onclick: async (e) => {
      try {
        await api("bookmark/delete", { bookmarkId: b.bookmarkId });
        e.target.closest("li").remove();
        const kind = b.type === "artist" ? "artist" : "track";
        counts[kind] = Math.max(0, counts[kind] - 1);
        show();
        toast(`Removed the bookmark of ${b.type === "artist" ? b.name : b.songTitle || b.name}.`);
      } catch (err) { toast(errorText(err), "error"); }
    } }, "Remove"));
  tracks.append(...(data.tracks || []).map(row));
  artistsList.append(...(data.artists || []).map(row));
  show();
  main.replaceChildren(heading("Bookmarks"),
    h("section", { "aria-labelledby": "bm-tracks" }, tracksTitle, tracks, tracksEmpty),
    h("section", { "aria-labelledby": "bm-artists" }, artistsTitle, artistsList, artistsEmpty));
}

// ---- settings ----------------------------------------------------------------------------------

export async function settingsView(main, { onSignOut }) {
  const listener = session.listener || {};
  const flags = session.flags;
  const status = (el) => h("p", { role: "status" }, el);

  // explicit filter
  const explicit = h("input", { type: "checkbox", id: "explicit" });
  const pin = h("input", { inputmode: "numeric", pattern: "[0-9]{4}", maxlength: 4, autocomplete: "off" });
  const explicitOut = status();
  const explicitForm = h("form.card", {
    "aria-labelledby": "explicit-title",
    onsubmit: async (e) => {
      e.preventDefault();
      const body = { explicitContentFilterEnabled: explicit.checked };
      if (pin.value) body.pin = pin.value;
      try {
        const s = await api("listener/updateSettings", body);
        explicit.checked = !!s.explicitContentFilterEnabled;
        listener.explicitContentFilterEnabled = explicit.checked;
        explicitOut.textContent = explicit.checked ? "Explicit tracks are filtered out." : "Explicit tracks may play.";
      } catch (err) {
        explicitOut.textContent = err.code === "EXPLICIT_PIN_INCORRECT" ? "Enter the right PIN to turn the filter off." : errorText(err);
      }
    },
  }, h("h2", { id: "explicit-title" }, "Explicit content"),
  h("div.check", explicit, h("label", { for: "explicit" }, "Filter out explicit tracks")),
  field("PIN (needed to turn the filter off when one is set)", pin), explicitOut,
  h("div.row", h("button", { type: "submit" }, "Save filter"),
    h("button", { type: "button", onclick: async () => {
      try {
        await api("listener/setExplicitPIN", { pin: pin.value });
        explicitOut.textContent = "PIN set. It is now needed to turn the filter off.";
      } catch (err) {
        explicitOut.textContent = err.code === "EXPLICIT_PIN_MALFORMED" ? "A PIN is 4 digits." : errorText(err);
      }
    } }, "Set this PIN")));

  // audio quality
  const hq = h("input", { type: "checkbox", id: "hq", disabled: !flags.highQualityStreamingAvailable });
  const format = h("select", formatsPlayable().map((f) => h("option", { value: f, selected: f === preferredFormat() },
    { mp3: "MP3 128 kbit/s", "mp3-hifi": "MP3 320 kbit/s (high quality)", opus: "Opus 96 kbit/s", aacplus: "AAC 64 kbit/s" }[f] || f)));
  const qualityOut = status();
  const qualityForm = h("form.card", {
    "aria-labelledby": "quality-title",
    onsubmit: async (e) => {
      e.preventDefault();
      setPreferredFormat(format.value);
      try {
        if (flags.highQualityStreamingAvailable) {
          const s = await api("listener/updateSettings", { highQualityStreamingEnabled: hq.checked });
          hq.checked = !!s.highQualityStreamingEnabled;
        }
        qualityOut.textContent = "Saved. The next tracks use it.";
      } catch (err) { qualityOut.textContent = errorText(err); }
    },
  }, h("h2", { id: "quality-title" }, "Audio quality"),
  h("div.check", hq, h("label", { for: "hq" }, "High-quality streaming"),
    flags.highQualityStreamingAvailable ? null : h("small.hint", " (Plus and Premium plans)")),
  field("Audio format", format), qualityOut, h("button", { type: "submit" }, "Save quality"));

  // playback: levelling and crossfade, kept by this browser
  const gainMode = h("select", { onchange: () => { player.setGainMode(gainMode.value); playbackOut.textContent = "Saved."; } },
    [["track", "Track: every track at the same loudness"], ["album", "Album: keep an album's own dynamics"], ["off", "Off"]]
      .map(([value, label]) => h("option", { value, selected: value === player.gainMode }, label)));
  const fade = h("select", { onchange: () => { player.setCrossfade(Number(fade.value)); playbackOut.textContent = "Saved."; } },
    [0, 1, 2, 3, 5, 8, 12].map((n) => h("option", { value: String(n), selected: n === player.crossfade }, n ? `${n} seconds` : "Off")));
  const playbackOut = status();
  const playbackForm = h("form.card", { "aria-labelledby": "playback-title", onsubmit: (e) => e.preventDefault() },
    h("h2", { id: "playback-title" }, "Playback"),
    field("Volume levelling (ReplayGain)", gainMode, "Album mode uses the album's gain where its tags have one."),
    field("Crossfade between tracks", fade, "Tracks that follow on in one album always play gapless."),
    playbackOut);

  // profile
  const displayName = h("input", { maxlength: 64, autocomplete: "nickname" });
  const bio = h("textarea", { rows: 3, maxlength: 1000 });
  const priv = h("input", { type: "checkbox", id: "private" });
  const email = h("input", { type: "email", maxlength: 320, autocomplete: "email" });
  const profileOut = status();
  const profileForm = h("form.card", {
    "aria-labelledby": "profile-title",
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("listener/setProfile", { displayName: displayName.value, bio: bio.value, profilePrivate: priv.checked });
        await api("listener/updateSettings", { email: email.value.trim() || null });
        profileOut.textContent = "Profile saved.";
      } catch (err) { profileOut.textContent = errorText(err); }
    },
  }, h("h2", { id: "profile-title" }, "Profile"), h("p.muted", `Signed in as ${listener.username || ""}${listener.tier ? ` · ${listener.tier} plan` : ""}`),
  field("Display name", displayName), field("About you", bio),
  h("div.check", priv, h("label", { for: "private" }, "Keep my profile private")),
  field("Email (for password reset links)", email), profileOut,
  h("button", { type: "submit" }, "Save profile"));

  // password
  const current = h("input", { type: "password", autocomplete: "current-password", required: true });
  const next = h("input", { type: "password", autocomplete: "new-password", required: true, minlength: 8 });
  const pwOut = status();
  const pwForm = h("form.card", {
    "aria-labelledby": "pw-title",
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const l = await api("listener/updateAccount", { currentUsername: listener.username, currentPassword: current.value, newPassword: next.value });
        if (l && l.authToken && l.authToken !== session.token) session.remember(l.authToken, !!localStorage.getItem("airwave.authToken"));
        if (l && l.listenerId) Object.assign(session.listener, l);
        current.value = "";
        next.value = "";
        pwOut.textContent = "Password changed. Your other devices have been signed out.";
      } catch (err) {
        pwOut.textContent = err.code === "INVALID_PASSWORD" ? "The current password is wrong, or the new one is too weak." : errorText(err);
      }
    },
  }, h("h2", { id: "pw-title" }, "Change password"), h("p.muted", "Changing your password signs out every other device."),
  field("Current password", current), field("New password", next), pwOut, h("button", { type: "submit" }, "Change password"));

  // sign out, sign out everywhere, delete
  const delPw = h("input", { type: "password", autocomplete: "current-password" });
  const everyPw = h("input", { type: "password", autocomplete: "current-password" });
  const everyOut = status();
  const everywhere = h("details", h("summary", "Sign out everywhere"),
    h("p.muted", "Ends the sessions of every browser and app signed in to this account, this one included."),
    field("Password", everyPw), everyOut,
    h("button", { type: "button", onclick: async () => {
      try {
        await api("auth/logoutAll", { currentPassword: everyPw.value });
        await onSignOut(true);
        toast("Signed out on every device.");
      } catch (err) {
        everyOut.textContent = err.code === "INVALID_PASSWORD" ? "That password is not right." : errorText(err);
      }
    } }, "Sign out everywhere"));
  const account = h("section.card", { "aria-labelledby": "account-title" }, h("h2", { id: "account-title" }, "Account"),
    h("div.row", h("button.primary", { type: "button", onclick: onSignOut }, "Sign out")), everywhere,
    h("details", h("summary", "Delete my account"),
      field("Password", delPw),
      h("button.danger", { type: "button", onclick: async () => {
        const ok = await dialog("Delete your account?", h("p", "All your stations, thumbs and bookmarks go with it. This cannot be undone."), [["Cancel", false], ["Delete account", true, "danger"]]);
        if (!ok) return;
        try {
          await api("listener/deleteListener", { currentPassword: delPw.value });
          toast("Account deleted.");
          onSignOut(true);
        } catch (err) { toast(errorText(err), "error"); }
      } }, "Delete account")));

  // app passwords for Subsonic apps
  const apps = appPasswordsCard(listener);

  main.replaceChildren(heading("Settings"), h("p.loading", "Loading…"));
  const [settings, profile] = await Promise.all([
    api("listener/updateSettings", {}).catch(() => listener),
    api("listener/getProfile", {}).catch(() => ({ profilePrivate: listener.profilePrivate })),
  ]);
  explicit.checked = !!settings.explicitContentFilterEnabled;
  hq.checked = !!flags.highQualityStreamingAvailable && !!settings.highQualityStreamingEnabled;
  displayName.value = profile.displayName || "";
  bio.value = profile.bio || "";
  priv.checked = !!profile.profilePrivate;
  email.value = settings.email || "";
  main.replaceChildren(heading("Settings"), h("div.grid2", profileForm, explicitForm, qualityForm, playbackForm, pwForm, apps.card, account));
  apps.load();
}

/** Settings card: app passwords that Subsonic apps (Symfonium, DSub, Feishin…) sign in with. */
function appPasswordsCard(listener) {
  const list = h("ul.list", { "aria-label": "App passwords" });
  const out = h("p", { role: "status" });
  const label = h("input", { maxlength: 64, placeholder: "e.g. Symfonium on my phone", autocomplete: "off" });
  const password = h("input", { type: "password", autocomplete: "current-password", required: true });
  const shown = h("div");
  const server = `${location.origin}/`;

  const row = (p) => h("li", { dataset: { appPasswordId: p.appPasswordId } },
    h("span", { style: "flex:1" }, h("strong", p.label), h("br"),
      h("small", `Made ${new Date(p.dateCreated).toLocaleDateString()} · ${p.lastUsed ? `last used ${new Date(p.lastUsed).toLocaleString()}` : "never used"}`)),
    h("button", { type: "button", "aria-label": `Revoke ${p.label}`, onclick: async () => {
      const ok = await dialog("Revoke this app password?", h("p", `Apps signed in with “${p.label}” stop working at once.`), [["Cancel", false], ["Revoke", true, "danger"]]);
      if (!ok) return;
      try {
        await api("listener/revokeAppPassword", { appPasswordId: p.appPasswordId });
        out.textContent = `Revoked “${p.label}”.`;
        shown.replaceChildren();
        await load();
      } catch (err) { out.textContent = errorText(err); }
    } }, "Revoke"));

  async function load() {
    try {
      const { appPasswords } = await api("listener/getAppPasswords", {});
      list.replaceChildren(...(appPasswords.length ? appPasswords.map(row) : [h("li.muted", "No app passwords yet.")]));
    } catch (err) { out.textContent = errorText(err); }
  }

  const form = h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const made = await api("listener/createAppPassword", { label: label.value.trim(), currentPassword: password.value });
        password.value = "";
        label.value = "";
        const secret = h("input.secret", { readonly: true, value: made.secret, "aria-label": "The new app password" });
        shown.replaceChildren(h("div.card", { role: "region", "aria-label": "New app password" },
          h("p", h("strong", "Copy it now: it is shown only this once.")),
          h("div.row", secret, h("button", { type: "button", onclick: async () => {
            secret.select();
            try { await navigator.clipboard.writeText(made.secret); toast("Copied."); } catch { document.execCommand("copy"); }
          } }, "Copy")),
          h("p.muted", `In the app: server ${server}, user ${listener.username || ""}, and this as the password.`)));
        out.textContent = `Made “${made.appPassword.label}”.`;
        await load();
      } catch (err) {
        out.textContent = err.code === "INVALID_PASSWORD" ? "That password is not right." : errorText(err);
      }
    },
  }, field("Name it after the app", label), field("Your password", password), h("button", { type: "submit" }, "Make an app password"));

  const card = h("section.card", { "aria-labelledby": "apps-title" }, h("h2", { id: "apps-title" }, "Subsonic apps"),
    h("p.muted", `Apps that speak Subsonic (Symfonium, DSub, Substreamer, Feishin…) connect to ${server} with your username and an app password, never your own password. Revoke one and that app is signed out.`),
    list, shown, out, h("details", h("summary", "New app password"), form));
  return { card, load };
}
