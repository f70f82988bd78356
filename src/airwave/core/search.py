"""Catalogue search: accent/case-insensitive, prefix-aware, ranked exact > prefix > word > fuzzy."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from airwave.core import ids, music
from airwave.core.catalog import browse, catalog, similar
from airwave.core.radio import stations
from airwave.library.names import search_key
from airwave.store.models import Album, Artist, Genre, Track
from airwave.store.sql import among

KINDS = ("AR", "AL", "TR", "GE")
EXACT, PREFIX, WORD, FUZZY = 4, 3, 2, 1
FUZZY_THRESHOLD = 0.3


@dataclass(frozen=True)
class Hit:
    kind: str
    ref_id: int
    name: str
    context: str
    tier: int
    similarity: float

    @property
    def score(self) -> float:
        return round(self.tier + min(self.similarity, 0.999), 3)


def trigrams(value: str) -> set[str]:
    padded = f"  {value} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def _jaccard(a: str, b: str) -> float:
    ta, tb = trigrams(a), trigrams(b)
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


def similarity(query: str, key: str) -> float:
    """Trigram similarity of the query to the key or to its best run of as many words."""
    best = _jaccard(query, key)
    words, width = key.split(), len(query.split())
    for start in range(max(0, len(words) - width + 1)):
        best = max(best, _jaccard(query, " ".join(words[start : start + width])))
    return best


def search(db: Session, query: str, kinds: tuple[str, ...] = KINDS, limit: int = 20) -> list[Hit]:
    """Best `limit` matches of the catalogue kinds asked for."""
    q = search_key(query)
    kinds = tuple(k for k in kinds if k in KINDS)
    if not q or not kinds or limit <= 0:
        return []
    if db.get_bind().dialect.name == "sqlite":
        return _sqlite(db, q, kinds, limit)
    return _postgres(db, q, kinds, limit)


def _kind_filter(kinds: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    params = {f"k{i}": k for i, k in enumerate(kinds)}
    return "e.kind IN (" + ", ".join(f":{p}" for p in params) + ")", params


def _sqlite(db: Session, q: str, kinds: tuple[str, ...], limit: int) -> list[Hit]:
    """Exact and prefix matches from the (kind, key) index, shortest first; word matches (the
    full-text index, best bm25 first) only when those do not fill the page: ranking every word
    match of a common word cost ~8 ms a kind at 100,000 tracks, the index range ~0.5 ms."""
    where, params = _kind_filter(kinds)
    span = {"q": q, "end": q + "\U0010ffff", "limit": limit, **params}  # keys starting with q
    rows = db.execute(
        text(f"""
            SELECT e.kind, e.ref_id, e.name, e.context, e.key,
                   CASE WHEN e.key = :q THEN {EXACT} ELSE {PREFIX} END AS tier
            FROM search_entries e
            WHERE {where} AND e.key >= :q AND e.key < :end
            ORDER BY tier DESC, length(e.key), e.id
            LIMIT :limit
        """),
        span,
    ).all()
    if len(rows) < limit:
        rows += db.execute(
            text(f"""
                SELECT e.kind, e.ref_id, e.name, e.context, e.key, {WORD} AS tier
                FROM search_fts JOIN search_entries e ON e.id = search_fts.rowid
                WHERE search_fts MATCH :match AND {where}
                      AND NOT (e.key >= :q AND e.key < :end)
                ORDER BY bm25(search_fts), length(e.key), e.id
                LIMIT :limit
            """),
            {**span, "match": " ".join(f'"{token}"*' for token in q.split())},
        ).all()
    hits = [Hit(r.kind, r.ref_id, r.name, r.context, r.tier, similarity(q, r.key)) for r in rows]
    if len(hits) < limit and len(q) >= 3:
        seen = {(h.kind, h.ref_id) for h in hits}
        grams = [
            g for g in trigrams(q) if g.strip() and " " not in g.strip() and len(g.strip()) == 3
        ]
        if grams:
            fuzzy = db.execute(
                text(f"""
                    SELECT e.kind, e.ref_id, e.name, e.context, e.key
                    FROM search_tri JOIN search_entries e ON e.id = search_tri.rowid
                    WHERE search_tri MATCH :match AND {where}
                    ORDER BY bm25(search_tri) LIMIT 200
                """),
                {"match": " OR ".join(f'"{g}"' for g in sorted(set(grams))), **params},
            ).all()
            scored = [(similarity(q, r.key), r) for r in fuzzy if (r.kind, r.ref_id) not in seen]
            scored.sort(key=lambda sr: (-sr[0], len(sr[1].key)))
            hits += [
                Hit(r.kind, r.ref_id, r.name, r.context, FUZZY, s)
                for s, r in scored
                if s >= FUZZY_THRESHOLD
            ]
    return hits[:limit]


def _postgres(db: Session, q: str, kinds: tuple[str, ...], limit: int) -> list[Hit]:
    where, params = _kind_filter(kinds)
    db.execute(text("SET LOCAL pg_trgm.word_similarity_threshold = 0.4"))
    tokens = q.split()
    word_terms = " AND ".join(f"(' ' || e.key) LIKE :w{i}" for i in range(len(tokens)))
    params.update({f"w{i}": f"% {t}%" for i, t in enumerate(tokens)})
    rows = db.execute(
        text(f"""
            SELECT e.kind, e.ref_id, e.name, e.context, e.key,
                   greatest(similarity(e.key, :q), word_similarity(:q, e.key)) AS sim,
                   CASE WHEN e.key = :q THEN {EXACT} WHEN e.key LIKE :prefix THEN {PREFIX}
                        WHEN {word_terms} THEN {WORD} ELSE {FUZZY} END AS tier
            FROM search_entries e
            WHERE {where} AND (e.key LIKE :prefix OR ({word_terms}) OR
                               (length(:q) >= 3 AND (e.key % :q OR :q <% e.key)))
            ORDER BY tier DESC, sim DESC, length(e.key), e.id
            LIMIT :limit
        """),
        {"q": q, "prefix": q + "%", "limit": limit, **params},
    ).all()
    hits = [Hit(r.kind, r.ref_id, r.name, r.context, r.tier, similarity(q, r.key)) for r in rows]
    return [h for h in hits if h.tier > FUZZY or h.similarity >= FUZZY_THRESHOLD]


# ---------------------------------------------------------------- use cases of search/*


@dataclass(frozen=True)
class Found:
    """One search result: a catalogue object (AR, AL, TR, GE) or one of the listener's stations
    (ST)."""

    kind: str
    ref_id: int
    name: str
    artist_name: str | None
    picture: catalog.Picture
    score: float
    seo_token: str | None = None  # artists, albums, tracks
    listener_count: int | None = None  # artists, tracks, genres: listeners with a station of it


def full_search(
    db: Session, listener_id: int, query: str, types: list[str], start: int, count: int
) -> list[Found]:
    """search/fullSearch: catalogue kinds and (with "ST") the listener's stations matching a
    query, best first."""
    wanted = start + count
    items: list[Found] = []
    for hit in search(db, query, tuple(t for t in types if t in KINDS), wanted):
        seo: str | None = None
        if hit.kind == "AR":
            artist = db.get(Artist, hit.ref_id)
            picture, artist_name = catalog.artist_picture(db, artist), None
            seo = ids.seo_token("artist", artist.id, artist.name)
        elif hit.kind == "AL":
            album = db.get(Album, hit.ref_id)
            picture = catalog.Picture(catalog.art_of(db, album.art_id))
            artist_name = hit.context or None
            seo = ids.seo_token("album", album.id, hit.context, album.title)
        elif hit.kind == "TR":
            track = db.get(Track, hit.ref_id)
            album = db.get(Album, track.album_id)
            picture = catalog.Picture(catalog.art_of(db, album.art_id))
            artist_name = hit.context or None
            seo = ids.seo_token("track", track.id, hit.context, album.title, track.title)
        else:
            picture, artist_name = catalog.Picture(), None
        listeners = (
            catalog.listener_counts(db, hit.kind, [hit.ref_id]).get(hit.ref_id, 0)
            if hit.kind in ("AR", "TR", "GE")
            else None
        )
        items.append(
            Found(hit.kind, hit.ref_id, hit.name, artist_name, picture, hit.score, seo, listeners)
        )
    if "ST" in types:
        words = search_key(query).split()
        if words:
            for station in stations.find_by_name(db, listener_id, words, wanted):
                exact = search_key(station.name) == " ".join(words)
                items.append(
                    Found(
                        "ST",
                        station.id,
                        station.name,
                        None,
                        catalog.Picture(),
                        4.999 if exact else 2.5,
                    )
                )
        items.sort(key=lambda i: -i.score)
    return items[start : start + count]


def seed_suggestions(
    db: Session, listener_id: int, station_id: str, seed_music_id: str | None, limit: int
) -> list[catalog.ArtistView]:
    """search/getSeedSuggestions: artists close to a seed (an artist, or a track's or album's
    artist), else close
    to the station's seeds and thumbs-up."""
    station = stations.get_station(db, listener_id, station_id)
    if not seed_music_id:
        return catalog.artist_views(db, similar.seed_suggestions(db, station, limit))
    ref = catalog.resolve(seed_music_id, "artist", "album", "track")
    if ref.kind == "track":
        artist_id = catalog.track(db, ref.id).artist_id
    elif ref.kind == "album":
        artist_id = catalog.album(db, ref.id).artist_id
    else:
        artist_id = catalog.artist(db, ref.id).id
    return catalog.artist_views(db, [a.id for a in catalog.nearest_artists(db, artist_id, limit)])


@dataclass(frozen=True)
class Recommendations:
    artists: list[catalog.ArtistView]
    genres: list[music.GenreStation]


def recommendations(db: Session, listener_id: int) -> Recommendations:
    """search/getStationRecommendations: artists and genres from the listener's history, not
    seeded yet."""
    artist_ids, genre_ids = similar.recommendations(db, listener_id)
    rows = {g.id: g for g in db.scalars(select(Genre).where(among(db, Genre.id, genre_ids)))}
    present = [g for g in genre_ids if g in rows]
    counts = catalog.genre_track_counts(db, present)
    genres = music.genre_station_list(db, [(rows[g], counts[g]) for g in present])
    return Recommendations(catalog.artist_views(db, artist_ids), genres)


_SOD_KINDS = {"AR": "AR", "TR": "TR", "AL": "AL", "GE": "GE", "SF": "GE"}  # SF: genre stations


@dataclass(frozen=True)
class CatalogueHits:
    """v3 sod/search: the objects found, best first, and (when asked) their annotations."""

    found: list[ids.Ref]
    notes: dict[ids.Ref, music.Note]


def catalogue_search(
    db: Session, query: str, types: list[str], start: int, count: int, annotate: bool
) -> CatalogueHits:
    """Tracks, albums, artists and genres matching a query, best first; type codes are read
    case-insensitively and codes of kinds Airwave has not (composers, playlists) are ignored."""
    kinds = list(dict.fromkeys(_SOD_KINDS[t.upper()] for t in types if t.upper() in _SOD_KINDS))
    if not kinds:
        return CatalogueHits([], {})
    names = {"AR": "artist", "AL": "album", "TR": "track", "GE": "genre"}
    hits = search(db, query, tuple(kinds), start + count)[start : start + count]
    found = [ids.Ref(names[h.kind], h.ref_id) for h in hits]  # type: ignore[arg-type]
    return CatalogueHits(found, music.annotate(db, found) if annotate else {})


SEARCH_KINDS = {"artist": "AR", "album": "AL", "track": "TR"}


def find(db: Session, query: str, kind: str, offset: int, count: int) -> list[int]:
    """Ids of artists, albums or tracks matching `query`, best first; an empty query (apps
    syncing the whole library) pages through all of them by name."""
    if count <= 0:
        return []
    if query.strip().strip('"').strip() == "":
        if kind == "artist":
            return [e.artist.id for e in browse.album_artists(db)[offset : offset + count]]
        if kind == "album":
            return browse.album_list(db, "alphabeticalByName", size=count, offset=offset)
        # the library's songs by name, kept in order while the catalogue stamp holds (an app
        # syncing pages through all of them; each page sorted them all, 0.28 s at 1M tracks)
        return browse.library_page(db, "track", "ALPHA", "", offset, count).ids
    hits = search(db, query, (SEARCH_KINDS[kind],), offset + count)
    return [h.ref_id for h in hits[offset : offset + count]]
