// The player: radio (fragments, the next track preloaded) and the library on demand (a queue of
// tracks granted one at a time, autoplay from the station engine when it runs out), through the
// same two audio elements, ReplayGain through Web Audio, receipts, skips, feedback, the
// one-active-player rule and the Media Session.

import { api, farewell, postReceipt, session } from "./api.js";

const FORMAT_KEY = "airwave.audioFormat";
const VOLUME_KEY = "airwave.volume";
const SKIPS_KEY = "airwave.skips";
const GAIN_KEY = "airwave.replayGain";
const FADE_KEY = "airwave.crossfade";
const RESUME_KEY = "airwave.resume";
// a saved track (its signed URLs, its token) older than this starts afresh instead
const RESUME_FRESH_MS = 6 * 3600e3;
const HOUR = 3600e3;
// while playing, how often to ask whether another device took the player over
const CLAIM_CHECK_MS = 2000;

/** A request that failed because the server is away (restart, network), not because of what it said. */
function unreachable(err) {
  return err && (err.status === 0 || err.status === 502 || err.status === 503 || err.status === 504);
}

/** Does the server answer its health check? */
async function serverUp() {
  try {
    return (await fetch("/healthz", { cache: "no-store" })).ok;
  } catch {
    return false;
  }
}

export function preferredFormat() {
  const chosen = localStorage.getItem(FORMAT_KEY);
  if (chosen && formatsPlayable().includes(chosen)) return chosen;
  return "mp3";
}

export function setPreferredFormat(format) {
  localStorage.setItem(FORMAT_KEY, format);
}

/** The delivery formats this browser can decode, best supported first. */
export function formatsPlayable() {
  const probe = document.createElement("audio");
  const out = [];
  if (probe.canPlayType("audio/mpeg")) out.push("mp3", "mp3-hifi");
  if (probe.canPlayType('audio/ogg; codecs="opus"')) out.push("opus");
  if (probe.canPlayType("audio/aac")) out.push("aacplus");
  return out;
}

export function isAd(track) {
  return !!track && track.trackType === "Ad";
}

export function trackTitle(track) {
  return (track && (track.songTitle || track.title)) || "";
}

const AUTOPLAY_SONGS = 5;
// an on-demand track granted ahead (while the one before it plays) is used within this long
const GRANT_FRESH_MS = 3600e3;
let itemKeys = 0;

/** A queue entry without what only this page holds (a grant made ahead of its turn). */
function bare(entry) {
  if (!entry || !entry.key) return entry; // radio tracks are plain objects
  const { ready, readyAt, granting, ...rest } = entry;
  return rest;
}

/** A queue entry of on-demand playback: a track's v4 annotation with a key of its own (the same
 * track may be queued twice). */
export function queueItem(note, extra = {}) {
  itemKeys += 1;
  return { ...note, ...extra, key: itemKeys };
}

/** Digits of a pandoraId or musicId ("AR:12" -> "12"). */
function idNumber(id) {
  return String(id || "").replace(/^\D+:?/, "");
}

/** An on-demand track in the shape the screens read for radio tracks: the queue entry's
 * annotation and the playback grant (getAudioPlaybackInfo) of this play. */
function grantedTrack(item, grant) {
  return {
    trackType: "Track",
    onDemand: true,
    item,
    pandoraId: item.pandoraId,
    musicId: item.musicId,
    songTitle: item.name,
    artistName: item.artistName || "",
    artistMusicId: item.artistId ? `R${idNumber(item.artistId)}` : "",
    albumTitle: item.albumName || "",
    albumArt: item.art || [],
    artistHref: item.artistId ? `#/library/artist/${encodeURIComponent(item.artistId)}` : "",
    albumHref: item.albumId ? `#/library/album/${encodeURIComponent(item.albumId)}` : "",
    trackLength: grant.trackLength || item.duration || 0,
    fileGain: grant.fileGain,
    albumGain: grant.albumGain,
    trackPeak: grant.trackPeak,
    albumPeak: grant.albumPeak,
    audioURL: grant.audioURL,
    audioEncoding: grant.audioEncoding,
    trackToken: grant.trackToken,
    audioReceiptURL: grant.audioReceiptURL,
    audioSkipUrl: grant.audioSkipUrl,
    rating: item.autoplay && item.autoplay.rating === 1 ? 1 : 0,
    allowSkip: true,
    // only autoplay's picks take thumbs (pods/addAutoplayFeedback); a track chosen by the
    // listener is not rated, and tired-of-track is a radio rule
    allowFeedback: !!item.autoplay,
    allowTiredOfTrack: false,
  };
}

class Player extends EventTarget {
  constructor() {
    super();
    this.station = null;
    this.context = null; // on demand: {pandoraId, name, href} of the album, playlist, artist or track
    this.queue = [];
    this.current = null;
    this.history = [];
    this.banned = new Set(); // musicIds thumbed down in this session, never played again
    this.serverSkips = new Map(); // stationId -> skipsRemaining of the latest fragment (the server's count)
    this.message = "";
    this.violation = false;
    this.loading = false;
    this.volume = Number(localStorage.getItem(VOLUME_KEY) || "0.8");
    this.gainMode = ["off", "track", "album"].includes(localStorage.getItem(GAIN_KEY)) ? localStorage.getItem(GAIN_KEY) : "track";
    this.crossfade = Math.min(12, Math.max(0, Number(localStorage.getItem(FADE_KEY)) || 0));
    this.fadingOut = null; // the element fading out under a crossfade
    this.savedAt = 0;
    this.muted = false;
    this.ctx = null;
    this.master = null;
    this.els = [this._makeAudio("a"), this._makeAudio("b")];
    this.active = 0;
    this.started = false;
    this.fetching = null;
    this.errorsInRow = 0;
    this._applyVolume();
    this._mediaSession();
    this.checking = false;
    this.recovering = false;
    setInterval(() => this._checkClaim(), CLAIM_CHECK_MS);
  }

  /** While this tab plays, ask every couple of seconds whether another device took the player
   * over: a taken-over tab stops within seconds, not at the end of the tracks it was handed. */
  async _checkClaim() {
    if (!this.playing || this.violation || this.checking || !session.token) return;
    this.checking = true;
    try {
      await api("station/checkActivePlayer", {});
    } catch (err) {
      if (err.code === "STREAM_VIOLATION" && this.playing) {
        this.violation = true;
        this._pauseQuietly();
        this._emit("violation");
      }
    } finally {
      this.checking = false;
    }
  }

  get audio() {
    return this.els[this.active];
  }

  get spare() {
    return this.els[1 - this.active];
  }

  get playing() {
    return !!this.current && !this.audio.paused;
  }

  /** A station or on-demand music is on (the player bar shows). */
  get tuned() {
    return !!(this.station || this.context);
  }

  /** On-demand tracks seek; radio keeps the service's rules (no seeking). */
  get canSeek() {
    return !!this.context && !!this.current;
  }

  _makeAudio(name) {
    const el = document.createElement("audio");
    el.preload = "auto";
    el.dataset.slot = name;
    el.hidden = true;
    el.addEventListener("ended", () => { if (el === this.audio) this._ended(); });
    el.addEventListener("playing", () => { if (el === this.audio) this._started(); });
    el.addEventListener("error", () => { if (el === this.audio && this.current) this._failed(); });
    el.addEventListener("timeupdate", () => {
      if (el !== this.audio) return;
      this._emit("time");
      this._maybeCrossfade(el);
    });
    el.addEventListener("pause", () => { if (el === this.audio) this._emit("state"); });
    el.addEventListener("play", () => { if (el === this.audio) this._emit("state"); });
    document.body.append(el);
    return el;
  }

  _emit(kind) {
    this.dispatchEvent(new CustomEvent("change", { detail: kind }));
    if (kind !== "time") this._updateMediaSession();
    if (kind !== "time" || Date.now() - this.savedAt > 3000) this._save();
  }

  // ---- resume after a reload ---------------------------------------------------------------

  /** Keep where the listener is (the station or on-demand queue, the track and the time in it),
   * so a reload carries on from there, paused. */
  _save() {
    if (!this.restored || !session.listener) return;
    this.savedAt = Date.now();
    try {
      if (!this.tuned) {
        localStorage.removeItem(RESUME_KEY);
        return;
      }
      const t = this.current;
      const state = {
        listenerId: session.listener.listenerId,
        at: Date.now(),
        station: this.station,
        context: this.context,
        queue: this.queue.slice(0, 200).map(bare),
        current: t && !isAd(t) ? (t.onDemand ? { ...t, item: bare(t.item) } : t) : null,
        position: t && !isAd(t) ? this.audio.currentTime || 0 : 0,
      };
      localStorage.setItem(RESUME_KEY, JSON.stringify(state));
    } catch (err) {
      /* storage full or blocked: nothing to resume, nothing lost */
    }
  }

  /** After a reload (or signing in again): the station or on-demand queue the listener left, at
   * the track and the time they left it, paused. Nothing is asked of the server until Play. */
  restore() {
    if (this.restored) return;
    this.restored = true;
    let state = null;
    try {
      state = JSON.parse(localStorage.getItem(RESUME_KEY) || "null");
    } catch (err) {
      state = null;
    }
    if (!state || !session.listener || state.listenerId !== session.listener.listenerId || this.tuned) return;
    if (!state.station && !state.context) return;
    // signed URLs and track tokens expire: an old save keeps the station or queue, not its track
    const fresh = Date.now() - (state.at || 0) < RESUME_FRESH_MS;
    this.station = state.station || null;
    this.context = this.station ? null : state.context;
    const saved = state.current;
    if (this.context) {
      this.queue = (state.queue || []).map((entry) => queueItem(entry));
      if (saved && saved.item && !fresh) this.queue.unshift(queueItem(saved.item));
    } else {
      this.queue = fresh ? state.queue || [] : [];
    }
    this._seekHandlers(!!this.context);
    if (saved && saved.audioURL && fresh) {
      const t = saved.onDemand ? { ...saved, item: queueItem(saved.item) } : saved;
      const el = this.audio;
      this.current = t;
      this.restoredTrack = t;
      this.started = true; // it began before the reload: trackStarted was sent then
      el.track = t;
      el.src = t.audioURL;
      const at = Math.max(0, Number(state.position) || 0);
      if (at) {
        el.addEventListener("loadedmetadata", () => {
          if (el.track === t && !el.currentTime) el.currentTime = isFinite(el.duration) ? Math.min(at, el.duration) : at;
        }, { once: true });
      }
      this._applyGain(el);
    }
    this.message = "Paused where you left off. Press play to carry on.";
    this._emit("station");
    this._emit("queue");
    this._emit("track");
  }

  /** Web Audio starts from a user gesture: every element gets its own ReplayGain node; both go
   * through the volume and a limiter, which holds what the peaks do not (untagged tracks raised
   * by their measured loudness, two tracks summed in a crossfade) at full scale. */
  unlock() {
    if (this.ctx) {
      if (this.ctx.state === "suspended") this.ctx.resume().catch(() => {});
      return;
    }
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return;
    try {
      this.ctx = new Ctx();
      this.master = this.ctx.createGain();
      this.limiter = this._limiter(this.ctx);
      this.master.connect(this.limiter);
      this.limiter.connect(this.ctx.destination);
      for (const el of this.els) {
        el.limiter = this.limiter;
        el.gainNode = this.ctx.createGain();
        this.ctx.createMediaElementSource(el).connect(el.gainNode);
        el.gainNode.connect(this.master);
      }
      for (const el of this.els) this._applyGain(el);
      this._applyVolume();
    } catch (err) {
      this.ctx = null;
    }
  }

  /** A limiter: above full scale a 20:1 compressor with a hard knee; under it (threshold 0 dB, so
   * no make-up gain) the sound passes unchanged. */
  _limiter(ctx) {
    const node = ctx.createDynamicsCompressor();
    node.threshold.value = 0;
    node.knee.value = 0;
    node.ratio.value = 20;
    node.attack.value = 0.001;
    node.release.value = 0.1;
    return node;
  }

  /** The ReplayGain of the element's track in the chosen mode: track, album (the album's gain
   * when its tags have one, else the track's) or off; never more than the peak allows (the gain
   * times the peak stays at full scale or under: ReplayGain's clipping prevention), with the
   * album's peak in album mode when known, else the track's. */
  _gainOf(el) {
    const t = el.track;
    if (!t || this.gainMode === "off") return 1;
    const known = (v) => v !== undefined && v !== null && v !== "";
    const album = this.gainMode === "album" && known(t.albumGain);
    const db = parseFloat(album ? t.albumGain : t.fileGain || "0") || 0;
    let gain = Math.pow(10, db / 20);
    const peak = parseFloat(album && known(t.albumPeak) ? t.albumPeak : t.trackPeak);
    if (peak > 0) gain = Math.min(gain, 1 / peak);
    return Math.min(4, Math.max(0.1, gain));
  }

  _applyGain(el) {
    const gain = this._gainOf(el);
    el.replayGain = gain;
    if (el.gainNode && el !== this.fadingOut) {
      el.gainNode.gain.cancelScheduledValues(0);
      el.gainNode.gain.value = gain;
    }
  }

  /** ReplayGain mode: "off", "track" or "album"; applies at once. */
  setGainMode(mode) {
    this.gainMode = ["off", "track", "album"].includes(mode) ? mode : "track";
    localStorage.setItem(GAIN_KEY, this.gainMode);
    for (const el of this.els) this._applyGain(el);
    this._emit("settings");
  }

  /** Seconds two tracks overlap (0: none); never between tracks that follow on in one album. */
  setCrossfade(seconds) {
    this.crossfade = Math.min(12, Math.max(0, Number(seconds) || 0));
    localStorage.setItem(FADE_KEY, String(this.crossfade));
    this._emit("settings");
  }

  _applyVolume() {
    const v = this.muted ? 0 : Math.min(1, Math.max(0, this.volume));
    if (this.master) {
      this.master.gain.value = v;
      for (const el of this.els) el.volume = 1;
    } else {
      for (const el of this.els) el.volume = v;
    }
  }

  setVolume(v) {
    this.volume = Math.min(1, Math.max(0, Math.round(v * 100) / 100));
    this.muted = false;
    localStorage.setItem(VOLUME_KEY, String(this.volume));
    this._applyVolume();
    this._emit("volume");
  }

  /** Mute or unmute, keeping the volume to come back to. */
  toggleMute() {
    this.muted = !this.muted;
    this._applyVolume();
    this._emit("volume");
  }

  // ---- skips -------------------------------------------------------------------------------

  _skipLog() {
    try {
      const log = JSON.parse(localStorage.getItem(SKIPS_KEY) || "{}");
      return log.listener === (session.listener && session.listener.listenerId) ? log : { listener: session.listener && session.listener.listenerId, skips: [], exhausted: {} };
    } catch (err) {
      return { listener: null, skips: [], exhausted: {} };
    }
  }

  _saveSkipLog(log) {
    const now = Date.now();
    log.skips = log.skips.filter((s) => now - s.t < 24 * HOUR);
    localStorage.setItem(SKIPS_KEY, JSON.stringify(log));
  }

  /** Skips left on the current station, or null when the tier has no limit. */
  skipsLeft() {
    const config = (session.listener && session.listener.config) || {};
    const perStation = config.stationSkipLimit || 0;
    const perDay = config.dailySkipLimit || 0;
    if (!this.station || (!perStation && !perDay)) return null;
    if (this.serverSkips.has(this.station.stationId)) {
      const known = this.serverSkips.get(this.station.stationId);
      return this.current && this.current.allowSkip === false ? 0 : known;
    }
    const log = this._skipLog();
    const now = Date.now();
    const exhaustedAt = log.exhausted[this.station.stationId];
    if (exhaustedAt && now - exhaustedAt < HOUR) return 0;
    let left = Infinity;
    if (perStation) {
      left = perStation - log.skips.filter((s) => s.s === this.station.stationId && now - s.t < HOUR).length;
    }
    if (perDay) left = Math.min(left, perDay - log.skips.filter((s) => now - s.t < 24 * HOUR).length);
    if (this.current && this.current.allowSkip === false) left = 0;
    return Math.max(0, left);
  }

  _noteSkip() {
    const log = this._skipLog();
    log.skips.push({ s: this.station.stationId, t: Date.now() });
    this._saveSkipLog(log);
  }

  _noteExhausted() {
    const log = this._skipLog();
    log.exhausted[this.station.stationId] = Date.now();
    this._saveSkipLog(log);
  }

  // ---- fragments ---------------------------------------------------------------------------

  async _fragment(reason, start = false) {
    const body = {
      stationId: this.station.stationId,
      fragmentRequestReason: reason,
      audioFormat: preferredFormat(),
    };
    if (start) body.isStationStart = true;
    const last = this.current || this.history[this.history.length - 1];
    if (last && last.trackToken) body.lastPlayedTrackToken = last.trackToken;
    try {
      const answer = await api("playlist/getFragment", body);
      this.violation = false;
      if (typeof answer.skipsRemaining === "number") this.serverSkips.set(body.stationId, answer.skipsRemaining);
      return (answer.tracks || []).filter((t) => isAd(t) || !this.banned.has(t.musicId));
    } catch (err) {
      if (err.code === "STREAM_VIOLATION") {
        this.violation = true;
        this._pauseQuietly();
        this._emit("violation");
      }
      throw err;
    }
  }

  /** Fetch the next fragment in the background unless one is already on its way. */
  _prefetch() {
    if (this.fetching || !this.station || this.violation) return;
    const station = this.station;
    this.fetching = this._fragment("Normal")
      .then((tracks) => { if (station === this.station) { this.queue.push(...tracks); this._preload(); } })
      .catch((err) => { if (err.code !== "STREAM_VIOLATION" && !unreachable(err)) this._say(err.message); })
      .finally(() => { this.fetching = null; });
  }

  async play(station) {
    this.unlock();
    this._leaveCurrent(true);
    this.station = station;
    this.context = null;
    this._seekHandlers(false);
    this.queue = [];
    this.current = null;
    this.message = "";
    this.loading = true;
    this._emit("station");
    try {
      this.queue = await this._fragment("Normal", true);
    } catch (err) {
      this.loading = false;
      if (err.code !== "STREAM_VIOLATION") this._say(this._explain(err));
      this._emit("state");
      return;
    }
    this.loading = false;
    await this._next();
  }

  /** Take over from another device of the account (spec §6.5), then carry on. */
  async takeOver() {
    this.unlock();
    await api("station/playbackResumed", { forceActive: true });
    this.violation = false;
    this._emit("violation");
    if (this.context) {
      if (this.current && this.audio.src) this.audio.play().catch(() => {});
      else await this._next();
      return;
    }
    if (!this.station) return;
    if (this.current && this.audio.src && this.queue.length) {
      this.audio.play().catch(() => {});
      this._prefetch();
    } else {
      await this.play(this.station);
    }
  }

  async _next() {
    if (this.context) {
      await this._nextOnDemand();
      return;
    }
    if (!this.queue.length) {
      try {
        if (this.fetching) await this.fetching;
        if (!this.queue.length) this.queue = await this._fragment("Normal");
      } catch (err) {
        this.current = null;
        if (unreachable(err)) this._recoverLater();
        else if (err.code !== "STREAM_VIOLATION") this._say(this._explain(err));
        this._emit("track");
        return;
      }
    }
    const track = this.queue.shift();
    if (!track) return;
    await this._startTrack(track);
  }

  /** Put `track` (with its audioURL) on the audio element and play it. */
  async _startTrack(track) {
    this.current = track;
    this.started = false;
    this.message = ""; // a status message was about the track before
    let el = this.spare;
    if (el.track !== track || el.error) {
      // not preloaded, or its preload failed (a stuck element never plays): load it afresh
      el = this.audio;
      el.track = track;
      el.src = track.audioURL;
    } else {
      this.active = 1 - this.active;
    }
    this.audio.currentTime = 0;
    this._applyGain(this.audio);
    const fade = this.fadeIn;
    this.fadeIn = 0;
    if (fade && this.audio.gainNode) {
      // a crossfade: this track rises while the last one falls
      const gain = this.audio.gainNode.gain;
      const at = this.ctx.currentTime;
      gain.cancelScheduledValues(at);
      gain.setValueAtTime(0, at);
      gain.linearRampToValueAtTime(this.audio.replayGain, at + fade);
    }
    this._emit("track");
    try {
      await this.audio.play();
    } catch (err) {
      if (err.name === "NotAllowedError") this._say("Press play to start listening.");
    }
    this._emit("state");
    this._preload();
    if (this.queue.length < 2) this._prefetch();
  }

  // ---- on demand -------------------------------------------------------------------------

  /** Play `items` (annotations of tracks) from `context` ({pandoraId, name, href}: the album,
   * playlist, artist or track they come from), from `start` on, shuffled if asked. */
  async playOnDemand(items, context, { start = 0, shuffle = false } = {}) {
    this.unlock();
    this._leaveCurrent(true);
    let list = items.slice(start).map((note) => queueItem(note));
    if (shuffle) {
      list = items.map((note) => queueItem(note));
      for (let i = list.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [list[i], list[j]] = [list[j], list[i]];
      }
    }
    this.station = null;
    this.context = context;
    this.queue = list;
    this.message = "";
    this.errorsInRow = 0;
    this._seekHandlers(true);
    this._emit("station");
    this._emit("queue");
    await this._next();
  }

  /** Play these tracks right after the current one (or now, when nothing on demand plays). */
  playNext(notes, context) {
    if (!this.context) return this.playOnDemand(notes, context);
    this.queue.unshift(...notes.map((note) => queueItem(note)));
    this._queueChanged();
    if (!this.current) return this._next();
    return Promise.resolve();
  }

  /** Add these tracks after the ones the listener queued, before autoplay's picks. */
  enqueue(notes, context) {
    if (!this.context) return this.playOnDemand(notes, context);
    let at = this.queue.findIndex((item) => item.autoplay);
    if (at < 0) at = this.queue.length;
    this.queue.splice(at, 0, ...notes.map((note) => queueItem(note)));
    this._queueChanged();
    if (!this.current) return this._next();
    return Promise.resolve();
  }

  removeFromQueue(key) {
    this.queue = this.queue.filter((item) => item.key !== key);
    this._queueChanged();
  }

  /** The queue was edited: show it, and have its (maybe new) first entry ready to follow on. */
  _queueChanged() {
    this._emit("queue");
    if (this.playing) this._preload();
  }

  /** Move a queue entry to `index` (clamped to the queue). */
  moveInQueue(key, index) {
    const from = this.queue.findIndex((item) => item.key === key);
    if (from < 0) return;
    const [item] = this.queue.splice(from, 1);
    this.queue.splice(Math.max(0, Math.min(index, this.queue.length)), 0, item);
    this._queueChanged();
  }

  clearQueue() {
    this.queue = [];
    this._emit("queue");
  }

  /** The next queue entry, granted by the server (a play in its log, the active-player claim,
   * receipt and skip URLs); autoplay refills an empty queue. */
  async _nextOnDemand() {
    const context = this.context;
    const turn = (this.turn = (this.turn || 0) + 1);
    if (!this.queue.length) {
      this.current = null;
      this.loading = true;
      this._emit("track");
      await this._autoplay(context);
      this.loading = false;
      if (this.context !== context || this.turn !== turn) return;
      if (!this.queue.length) {
        this._emit("track");
        return;
      }
    }
    const item = this.queue.shift();
    this._emit("queue");
    if (item.ready && Date.now() - item.readyAt < GRANT_FRESH_MS) {
      // granted while the track before it played: it is loaded and starts at once
      await this._startTrack(item.ready);
      return;
    }
    let grant;
    try {
      grant = await api("ondemand/getAudioPlaybackInfo", this._grantBody(item, context));
      this.violation = false;
    } catch (err) {
      if (this.context !== context || this.turn !== turn) return;
      this.current = null;
      if (err.code === "STREAM_VIOLATION" || unreachable(err)) {
        this.queue.unshift(item); // it plays once this device may play again
        this._emit("queue");
        if (err.code === "STREAM_VIOLATION") {
          this.violation = true;
          this._pauseQuietly();
          this._emit("violation");
        } else {
          this._say("Lost the connection to the server. Press play to try again.");
        }
        this._emit("track");
        return;
      }
      this.errorsInRow += 1;
      this._say(err.message);
      if (this.errorsInRow > 3) {
        this._emit("track");
        return;
      }
      await this._nextOnDemand();
      return;
    }
    if (this.context !== context || this.turn !== turn) return;
    await this._startTrack(grantedTrack(item, grant));
  }

  _grantBody(item, context) {
    const body = { pandoraId: item.pandoraId, audioFormat: preferredFormat() };
    if (!item.autoplay && /^(AL|PL):/.test(context.pandoraId)) body.sourcePandoraId = context.pandoraId;
    return body;
  }

  /** On demand, the next queue entry is granted while this one plays, so it is loaded when this
   * one ends and starts at once: albums play gapless, and a crossfade has it ready. */
  async _grantAhead(item) {
    if (item.ready || item.granting || !this.context || this.violation) return;
    const context = this.context;
    item.granting = true;
    try {
      const grant = await api("ondemand/getAudioPlaybackInfo", this._grantBody(item, context));
      if (this.context !== context) return;
      item.ready = grantedTrack(item, grant);
      item.readyAt = Date.now();
      this._preload();
    } catch (err) {
      /* its turn asks again (and says what went wrong) */
    } finally {
      item.granting = false;
    }
  }

  // ---- crossfade -----------------------------------------------------------------------------

  /** Do `b` and `a` follow on in one album (played on demand)? Those never crossfade. */
  _followsOn(a, b) {
    return !!(a.onDemand && b.onDemand && a.item.albumId && a.item.albumId === b.item.albumId);
  }

  /** With crossfade on, near the end of a track whose successor is loaded: start that one and fade
   * from one to the other (Web Audio gain ramps). */
  _maybeCrossfade(el) {
    if (!this.crossfade || !this.ctx || this.fadingOut || el.paused || !this.started) return;
    const t = this.current;
    const next = this.queue[0];
    if (!t || !next || isAd(t) || isAd(next)) return;
    const ready = next.audioURL ? next : next.ready;
    if (!ready || this.spare.track !== ready || this.spare.readyState < 3 || this._followsOn(t, ready)) return;
    const length = this._length(el);
    if (!length || length < 2 * this.crossfade || length - el.currentTime > this.crossfade) return;
    this._fadeAcross();
  }

  /** How long the element's track lasts: what the element knows, else what the server said (a
   * transcode still being made streams without a length). */
  _length(el) {
    return isFinite(el.duration) && el.duration ? el.duration : (el.track && el.track.trackLength) || 0;
  }

  _fadeAcross() {
    const old = this.audio;
    const track = this.current;
    const seconds = Math.max(0.1, this._length(old) - old.currentTime);
    this.fadingOut = old;
    // it plays out under the next one: a finished play
    postReceipt(track.audioReceiptURL, track.trackLength || old.duration);
    this.history.push(track);
    this.current = null;
    this.fadeIn = seconds;
    const gain = old.gainNode.gain;
    const at = this.ctx.currentTime;
    gain.cancelScheduledValues(at);
    gain.setValueAtTime(gain.value, at);
    gain.linearRampToValueAtTime(0, at + seconds);
    const done = () => {
      if (this.fadingOut !== old) return;
      this.fadingOut = null;
      old.pause();
      this._applyGain(old);
      this._preload();
    };
    old.addEventListener("ended", done, { once: true });
    setTimeout(done, seconds * 1000 + 250);
    this._next();
  }

  /** More music after the context ran out: the station engine's picks, which lean to this
   * context's thumbs-up and never bring back a thumbs-down. After a playlist they come from
   * pods/getPlaylistAutoplaySongs, after an album, artist or track from pods/getAutoplaySongs;
   * after anything else (a genre's songs, a queue whose playlist or album is gone) they follow on
   * from the last track played, so the music never stops at the end of a queue. */
  async _autoplay(context) {
    const recent = [...this.history, this.current].filter((t) => t && /^TR:/.test(t.pandoraId || ""));
    const contextTracks = [...new Set(recent.map((t) => t.pandoraId).reverse())].slice(0, 20);
    const ask = (endpoint, contextId) => api(endpoint, { contextId, numSongs: AUTOPLAY_SONGS, contextTracks });
    const last = contextTracks[0];
    let answer;
    try {
      try {
        if (/^PL:/.test(context.pandoraId)) answer = await ask("v4/pods/getPlaylistAutoplaySongs", context.pandoraId);
        else if (/^(AL|AR|TR):/.test(context.pandoraId)) answer = await ask("v4/pods/getAutoplaySongs", context.pandoraId);
      } catch (err) {
        // the context is gone (a deleted playlist): carry on from its last track
        if (!last || !["NOT_FOUND", "INVALID_PANDORA_TYPE", "INVALID_REQUEST"].includes(err.code)) throw err;
      }
      if (!answer) {
        if (!last) {
          this._say("Nothing more to play.");
          return;
        }
        answer = await ask("v4/pods/getAutoplaySongs", last);
      }
      if (this.context !== context) return;
      const notes = answer.annotations || {};
      for (const pick of answer.songRecommendations || []) {
        const note = notes[pick.pandoraId];
        if (!note || this.banned.has(pick.pandoraId)) continue;
        this.queue.push(queueItem(note, {
          autoplay: { token: pick.token, sourceId: pick.autoplaySourceId, rating: pick.songRating },
        }));
      }
      if (!this.queue.length) this._say("Nothing more to play.");
      this._emit("queue");
    } catch (err) {
      if (this.context === context) this._say(err.code === "LISTENER_NOT_AUTHORIZED" ? "Autoplay is part of Premium." : err.message);
    }
  }

  /** Thumbs on an autoplay pick: the engine's next picks for this context follow them. */
  async _autoplayFeedback(track, positive) {
    await api("v4/pods/addAutoplayFeedback", { token: track.item.autoplay.token, isPositive: positive });
  }

  /** Jump to `seconds` in an on-demand track. */
  seekTo(seconds) {
    if (!this.canSeek) return;
    const a = this.audio;
    const end = (isFinite(a.duration) && a.duration) || this.current.trackLength || 0;
    a.currentTime = Math.max(0, Math.min(seconds, end ? end - 0.05 : seconds));
    this._emit("time");
    this._save();
  }

  /** Lock screens may seek on-demand tracks; radio leaves seeking unset. */
  _seekHandlers(on) {
    if (!("mediaSession" in navigator)) return;
    const set = (action, fn) => { try { navigator.mediaSession.setActionHandler(action, fn); } catch (err) { /* unsupported */ } };
    set("seekto", on ? (d) => this.seekTo(d.seekTime) : null);
    set("seekbackward", on ? (d) => this.seekTo(this.audio.currentTime - (d.seekOffset || 10)) : null);
    set("seekforward", on ? (d) => this.seekTo(this.audio.currentTime + (d.seekOffset || 10)) : null);
  }

  _preload() {
    const entry = this.queue[0];
    const el = this.spare;
    if (!entry || el === this.fadingOut) return;
    const next = entry.audioURL ? entry : entry.ready; // on demand: granted ahead while one plays
    if (!next) {
      if (this.context && this.playing) this._grantAhead(entry);
      return;
    }
    if (el.track !== next) {
      el.pause();
      el.track = next;
      el.src = next.audioURL;
      el.load();
      this._applyGain(el);
    }
  }

  _started() {
    const track = this.current;
    if (!track || this.started) return;
    this.started = true;
    this.errorsInRow = 0;
    if (isAd(track)) {
      const token = track.adToken || track.trackToken;
      if (token) api("ad/registerImpression", { adTokens: [token] }).catch(() => {});
    } else if (track.trackToken) {
      api("station/trackStarted", { trackToken: track.trackToken }).catch(() => {});
    }
    this._emit("state");
  }

  _ended() {
    const track = this.current;
    if (!track) return;
    this.errorsInRow = 0;
    if (!isAd(track)) postReceipt(track.audioReceiptURL, track.trackLength || this.audio.duration);
    this.history.push(track);
    this.current = null;
    this._next();
  }

  async _failed() {
    const track = this.current;
    this.current = null;
    if (track === this.restoredTrack && this.audio.paused) {
      // the track a reload put back could not load (its URL expired): Play starts afresh
      this.restoredTrack = null;
      if (this.context && track.item) this.queue.unshift(track.item);
      else this.queue = [];
      this._emit("queue");
      this._emit("track");
      return;
    }
    if (!(await serverUp())) {
      // not the track: the server is away (restarting, or the network dropped)
      this._recoverLater();
      this._emit("track");
      return;
    }
    if (isAd(track) && (track.adToken || track.trackToken)) {
      api("ad/brokenAd", { adToken: track.adToken || track.trackToken }).catch(() => {});
    }
    this.errorsInRow += 1;
    if (this.errorsInRow > 3) {
      this._say("Tracks of this station cannot be played right now.");
      this._emit("track");
      return;
    }
    setTimeout(() => this._next(), 300);
  }

  /** The server went away while this station played: try again with backoff (1 s doubling to
   * 15 s) and, once it answers, carry on with a fresh fragment, as if nothing had happened. */
  _recoverLater() {
    if (this.recovering || !this.station) return;
    this.recovering = true;
    this._say("Lost the connection to the server. Trying again…");
    const station = this.station;
    let delay = 1000;
    const attempt = async () => {
      if (this.station !== station || this.violation || this.current) {
        this.recovering = false;
        return;
      }
      try {
        if (!(await serverUp())) throw new Error("away");
        const tracks = await this._fragment("Normal");
        this.recovering = false;
        if (this.station !== station || this.current) return;
        this.errorsInRow = 0;
        this.message = "";
        for (const el of this.els) { el.pause(); el.removeAttribute("src"); el.track = null; el.load(); }
        this.queue = tracks;
        await this._next();
      } catch (err) {
        if (err.code === "STREAM_VIOLATION") { this.recovering = false; return; }
        delay = Math.min(delay * 2, 15000);
        setTimeout(attempt, delay);
      }
    };
    setTimeout(attempt, delay);
  }

  /** Report the current spin as skipped and forget it. */
  _leaveCurrent(skipped) {
    const track = this.current;
    if (track && !isAd(track) && skipped && this.started) postReceipt(track.audioSkipUrl, this.audio.currentTime);
    if (track && this.started) this.history.push(track);
    this.current = null;
    for (const el of this.els) el.pause();
  }

  _pauseQuietly() {
    for (const el of this.els) el.pause();
    this._emit("state");
  }

  _say(text) {
    this.message = text;
    this._emit("message");
  }

  _explain(err) {
    switch (err.code) {
      case "STATION_LIMIT_REACHED":
        return "You have reached your skip limit for now. Skips come back within the hour.";
      case "PLAYLIST_END":
        return "This station has nothing left to play. Add a seed to widen it.";
      case "UNPLAYABLE_SHUFFLE_STATION":
        return "Shuffle has no station selected. Pick some in its details.";
      case "PLAYLIST_EXCEEDED":
        return "Too many requests in a short time. Wait a minute, then press play.";
      case "STATION_DOES_NOT_EXIST":
        return "This station no longer exists.";
      default:
        return err.message;
    }
  }

  // ---- controls ----------------------------------------------------------------------------

  async toggle() {
    this.unlock();
    if (!this.current || (this.audio.error && this.tuned)) {
      // nothing to resume, or the element is stuck on a failed load: start afresh
      if (this.station) await this.play(this.station);
      else if (this.context) await this._next();
      return;
    }
    if (this.audio.paused) {
      try {
        await api("station/playbackResumed", {});
      } catch (err) {
        if (err.code === "STREAM_VIOLATION") {
          this.violation = true;
          this._emit("violation");
          return;
        }
      }
      await this.audio.play().catch(() => {});
    } else {
      this.audio.pause();
      if (this.fadingOut) this.fadingOut.pause();
      api("station/playbackPaused", {}).catch(() => {});
    }
    this._emit("state");
  }

  /** Skip: one of the tier's skips; new tracks replace what was queued. */
  async skip() {
    const track = this.current;
    if (this.context) {
      // on demand: the next in the queue, no limits
      if (!track && !this.queue.length) return;
      this._leaveCurrent(true);
      await this._next();
      return;
    }
    if (!track || !this.station) return;
    if (isAd(track)) {
      this._say("Ads cannot be skipped.");
      return;
    }
    if (track.allowSkip === false || this.skipsLeft() === 0) {
      this._say(this._explain({ code: "STATION_LIMIT_REACHED" }));
      return;
    }
    let tracks;
    try {
      tracks = await this._fragment("Skip");
    } catch (err) {
      if (err.code === "STATION_LIMIT_REACHED") {
        this._noteExhausted();
        track.allowSkip = false;
      }
      if (err.code !== "STREAM_VIOLATION") this._say(this._explain(err));
      this._emit("state");
      return;
    }
    this._noteSkip();
    this.message = "";
    this._replaceQueue(tracks);
  }

  _replaceQueue(tracks) {
    this._leaveCurrent(true);
    this.queue = tracks.length ? tracks : this.queue.filter((t) => isAd(t) || !this.banned.has(t.musicId));
    this._next();
  }

  async thumbUp() {
    const track = this.current;
    if (!track || !track.trackToken || isAd(track)) return;
    if (track.onDemand) {
      if (!track.item.autoplay || track.rating === 1) return; // the last thumb counts: it stays
      try {
        await this._autoplayFeedback(track, true);
        track.rating = 1;
      } catch (err) {
        this._say(err.message);
      }
      this._emit("state");
      return;
    }
    try {
      if (track.rating === 1) {
        await api("station/deleteFeedback", { trackToken: track.trackToken });
        track.rating = 0;
      } else {
        await api("station/addFeedback", { trackToken: track.trackToken, isPositive: true });
        track.rating = 1;
      }
    } catch (err) {
      this._say(err.message);
    }
    this._emit("state");
  }

  /** Thumbs down: recorded, then the track stops at once and never comes back. */
  async thumbDown() {
    const track = this.current;
    if (!track || !track.trackToken || isAd(track)) return;
    if (track.onDemand) {
      if (!track.item.autoplay) return;
      try {
        await this._autoplayFeedback(track, false);
      } catch (err) {
        this._say(err.message);
        return;
      }
      // it stops at once; autoplay's other picks are chosen again, knowing the thumb
      this.banned.add(track.pandoraId);
      this.queue = this.queue.filter((item) => !item.autoplay);
      this._leaveCurrent(true);
      await this._next();
      return;
    }
    try {
      await api("station/addFeedback", { trackToken: track.trackToken, isPositive: false });
    } catch (err) {
      this._say(err.message);
      return;
    }
    this.banned.add(track.musicId);
    await this._moveOn("ThumbsDown");
  }

  async tired() {
    const track = this.current;
    if (!track || !track.trackToken || isAd(track)) return;
    try {
      await api("listener/addTiredSong", { trackToken: track.trackToken });
    } catch (err) {
      this._say(err.message);
      return;
    }
    this.banned.add(track.musicId);
    this._say("Got it: you won't hear this track for a month.");
    await this._moveOn("Tired");
  }

  async _moveOn(reason) {
    let tracks = [];
    try {
      tracks = await this._fragment(reason);
    } catch (err) {
      if (err.code === "STREAM_VIOLATION") return;
    }
    this._replaceQueue(tracks);
  }

  /** Play a track of this station again (tiers with replaysEnabled). */
  async replay(track) {
    if (!this.station || !track || !track.trackToken) return;
    try {
      const answer = await api("ondemand/getReplayTrack", {
        stationId: this.station.stationId, trackToken: track.trackToken, audioFormat: preferredFormat(),
        lastPlayedTrackToken: this.current ? this.current.trackToken : undefined,
      });
      this._leaveCurrent(true);
      this.queue.unshift(answer.replayTrack);
      await this._next();
    } catch (err) {
      this._say(err.code === "CALL_NOT_ALLOWED" ? "A track you gave a thumbs-down cannot be replayed." : err.message);
    }
  }

  seekBy(seconds) {
    if (this.canSeek) this.seekTo(this.audio.currentTime + seconds);
  }

  /** Stop everything (sign-out, station deleted). */
  stop() {
    this._leaveCurrent(true);
    for (const el of this.els) {
      el.removeAttribute("src");
      el.track = null;
      el.load();
    }
    this.station = null;
    this.context = null;
    this.restoredTrack = null;
    this._seekHandlers(false);
    this.queue = [];
    this.history = [];
    this.banned = new Set();
    this.violation = false;
    this.message = "";
    this._emit("station");
  }

  // ---- Media Session -----------------------------------------------------------------------

  _mediaSession() {
    if (!("mediaSession" in navigator)) return;
    const ms = navigator.mediaSession;
    const set = (action, fn) => { try { ms.setActionHandler(action, fn); } catch (err) { /* unsupported */ } };
    set("play", () => this.toggle());
    set("pause", () => this.toggle());
    set("nexttrack", () => this.skip());
    set("stop", () => { this.audio.pause(); });
    // radio: no seeking and no previous track (the service's rules), so those stay unset
    for (const el of this.els) {
      el.addEventListener("durationchange", () => { if (el === this.audio) this._positionState(); });
      el.addEventListener("ratechange", () => { if (el === this.audio) this._positionState(); });
      el.addEventListener("seeked", () => { if (el === this.audio) this._positionState(); });
      el.addEventListener("playing", () => { if (el === this.audio) this._positionState(); });
    }
  }

  /** Lock screens draw a progress bar from this: length, position and rate of the track. */
  _positionState() {
    if (!("mediaSession" in navigator) || !navigator.mediaSession.setPositionState) return;
    const a = this.audio;
    const duration = (isFinite(a.duration) && a.duration) || (this.current && this.current.trackLength) || 0;
    try {
      if (!this.current || !duration) navigator.mediaSession.setPositionState();
      else navigator.mediaSession.setPositionState({ duration, playbackRate: a.playbackRate || 1, position: Math.min(a.currentTime, duration) });
    } catch (err) {
      /* position state is best effort */
    }
  }

  _updateMediaSession() {
    if (!("mediaSession" in navigator) || typeof MediaMetadata === "undefined") return;
    const t = this.current;
    try {
      navigator.mediaSession.metadata = t ? new MediaMetadata({
        title: trackTitle(t),
        artist: isAd(t) ? "Advertisement" : t.artistName || "",
        album: t.albumTitle || (this.station ? this.station.name : ""),
        artwork: (t.albumArt || t.art || []).map((a) => ({ src: a.url, sizes: `${a.size}x${a.size}`, type: "image/jpeg" })),
      }) : null;
      navigator.mediaSession.playbackState = t ? (this.audio.paused ? "paused" : "playing") : "none";
    } catch (err) {
      /* metadata is best effort */
    }
  }
}

export const player = new Player();

// Closing the tab (or navigating away) while playing releases the account's player claim at
// once, so another device plays without waiting for this one's music to run out.
window.addEventListener("pagehide", () => {
  player._save();
  if (player.playing) farewell("station/playbackPaused", {});
});
