"""The radio rules of spec §6.4, as a filter a pick can never get past."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

WINDOW = timedelta(hours=3)


@dataclass(frozen=True)
class Rules:
    """Separation limits per station (defaults are the sound-recording performance complement)."""

    repeat_spins: int = 50  # no track repeats within this many spins
    album_cap: int = 3  # per album in any WINDOW
    artist_cap: int = 4  # per artist in any WINDOW
    album_run: int = 2  # never more than this many from one album in a row
    artist_run: int = 3  # ... or from one artist
    window: timedelta = WINDOW

    @classmethod
    def relaxed(cls, playable: int, artists: int, albums: int) -> Rules:
        """For small libraries: no per-window caps, a repeat window scaled to the library, no
        back-to-back repeats."""
        strict = cls()
        return cls(
            repeat_spins=max(1, min(strict.repeat_spins, playable // 2)),
            album_cap=1_000_000,
            artist_cap=1_000_000,
            album_run=strict.album_run if albums > 2 else 1_000_000,
            artist_run=strict.artist_run if artists > 3 else 1_000_000,
        )


@dataclass(frozen=True)
class Played:
    track_id: int
    artist_id: int
    album_id: int
    at: datetime


@dataclass
class History:
    """A station's recent spins, newest first, and the per-artist/album counts in the time
    window."""

    spins: list[Played]
    now: datetime
    rules: Rules
    _albums: Counter[int] = field(default_factory=Counter)
    _artists: Counter[int] = field(default_factory=Counter)
    _recent: set[int] = field(default_factory=set)
    # the album and the artist that filled the whole last run (None: no run is full)
    _album_run: int | None = None
    _artist_run: int | None = None

    def __post_init__(self) -> None:
        since = self.now - self.rules.window
        for spin in self.spins:
            if spin.at > since:
                self._albums[spin.album_id] += 1
                self._artists[spin.artist_id] += 1
        self._update()

    def _update(self) -> None:
        rules = self.rules
        self._recent = {s.track_id for s in self.spins[: rules.repeat_spins]}
        run = self.spins[: rules.album_run]
        self._album_run = (
            run[0].album_id
            if len(run) == rules.album_run and all(s.album_id == run[0].album_id for s in run)
            else None
        )
        run = self.spins[: rules.artist_run]
        self._artist_run = (
            run[0].artist_id
            if len(run) == rules.artist_run and all(s.artist_id == run[0].artist_id for s in run)
            else None
        )

    def allows(self, track_id: int, artist_id: int, album_id: int) -> bool:
        """Whether playing this track now keeps every rule."""
        rules = self.rules
        return not (
            track_id in self._recent
            or self._albums.get(album_id, 0) >= rules.album_cap
            or self._artists.get(artist_id, 0) >= rules.artist_cap
            or album_id == self._album_run
            or artist_id == self._artist_run
        )

    def add(self, played: Played) -> None:
        """Record a pick (newest), so the next pick of the same fragment sees it."""
        self.spins.insert(0, played)
        self._albums[played.album_id] += 1
        self._artists[played.artist_id] += 1
        self._update()


def violations(spins: list[Played], rules: Rules) -> list[str]:
    """Every rule a sequence of spins (oldest first) breaks; used by tests and diagnostics."""
    found = []
    for i, spin in enumerate(spins):
        before = spins[max(0, i - rules.repeat_spins) : i]
        if any(s.track_id == spin.track_id for s in before):
            found.append(
                f"spin {i}: track {spin.track_id} repeated within {rules.repeat_spins} spins"
            )
        window = [s for s in spins[: i + 1] if s.at > spin.at - rules.window]
        if sum(s.album_id == spin.album_id for s in window) > rules.album_cap:
            found.append(f"spin {i}: album {spin.album_id} over {rules.album_cap} in the window")
        if sum(s.artist_id == spin.artist_id for s in window) > rules.artist_cap:
            found.append(f"spin {i}: artist {spin.artist_id} over {rules.artist_cap} in the window")
        run = spins[max(0, i - rules.album_run) : i + 1]
        if len(run) > rules.album_run and all(s.album_id == spin.album_id for s in run):
            found.append(
                f"spin {i}: more than {rules.album_run} from album {spin.album_id} in a row"
            )
        run = spins[max(0, i - rules.artist_run) : i + 1]
        if len(run) > rules.artist_run and all(s.artist_id == spin.artist_id for s in run):
            found.append(
                f"spin {i}: more than {rules.artist_run} from artist {spin.artist_id} in a row"
            )
    return found
