"""Spec §6.4 separation rules: what a station may play next, as the clock moves."""

from __future__ import annotations

from datetime import timedelta

from airwave.core.clock import FixedClock
from airwave.core.radio.engine.rules import WINDOW, History, Played, Rules, violations


def played(
    clock: FixedClock, track: int, artist: int, album: int, minutes_ago: float = 0
) -> Played:
    return Played(track, artist, album, clock.now() - timedelta(minutes=minutes_ago))


def history(clock: FixedClock, spins: list[Played], rules: Rules | None = None) -> History:
    """Spins given newest first, as the station's history holds them."""
    return History(list(spins), clock.now(), rules or Rules())


def test_a_track_does_not_repeat_within_the_repeat_window(clock: FixedClock) -> None:
    rules = Rules(repeat_spins=3)
    spins = [
        played(clock, 10 + i, 100 + i, 200 + i, minutes_ago=i) for i in range(3)
    ]  # tracks 10, 11, 12
    assert not history(clock, spins, rules).allows(12, 999, 999)
    older = [*spins, played(clock, 13, 103, 203, minutes_ago=4)]
    assert history(clock, older, rules).allows(13, 103, 203)  # four spins back: out of the window


def test_album_cap_counts_spins_inside_the_time_window_only(clock: FixedClock) -> None:
    rules = Rules(album_run=10, artist_run=10)
    spins = [
        played(clock, i, 100 + i, 7, minutes_ago=30 * (i + 1)) for i in range(3)
    ]  # album 7 three times
    assert not history(clock, spins, rules).allows(50, 150, 7)
    clock.advance(
        (WINDOW - timedelta(minutes=30 * 3)).total_seconds()
    )  # the oldest leaves the window
    assert history(clock, spins, rules).allows(50, 150, 7)


def test_artist_cap_is_four_per_window(clock: FixedClock) -> None:
    rules = Rules(artist_run=10)
    spins = [played(clock, i, 5, 100 + i, minutes_ago=20 * (i + 1)) for i in range(4)]
    assert not history(clock, spins, rules).allows(50, 5, 150)
    assert history(clock, spins[:3], rules).allows(50, 5, 150)


def test_a_spin_exactly_window_old_no_longer_counts(clock: FixedClock) -> None:
    rules = Rules(album_cap=1, album_run=10, artist_run=10)
    spins = [played(clock, 1, 1, 7, minutes_ago=WINDOW.total_seconds() / 60)]
    assert history(clock, spins, rules).allows(2, 2, 7)
    spins = [played(clock, 1, 1, 7, minutes_ago=WINDOW.total_seconds() / 60 - 1)]
    assert not history(clock, spins, rules).allows(2, 2, 7)


def test_no_more_than_two_from_one_album_in_a_row(clock: FixedClock) -> None:
    spins = [played(clock, 1, 1, 7), played(clock, 2, 2, 7, minutes_ago=4)]
    assert not history(clock, spins).allows(3, 3, 7)
    broken = [played(clock, 1, 1, 7), played(clock, 2, 2, 8, minutes_ago=4)]
    assert history(clock, broken).allows(3, 3, 7)


def test_no_more_than_three_from_one_artist_in_a_row(clock: FixedClock) -> None:
    spins = [played(clock, i, 5, 100 + i, minutes_ago=4 * i) for i in range(3)]
    assert not history(clock, spins).allows(9, 5, 109)
    assert history(clock, spins[:2]).allows(9, 5, 109)


def test_add_makes_the_next_pick_of_a_fragment_see_the_previous(clock: FixedClock) -> None:
    h = history(clock, [played(clock, 1, 1, 7, minutes_ago=4)])
    assert h.allows(2, 2, 7)
    h.add(played(clock, 2, 2, 7))
    assert not h.allows(3, 3, 7)  # two from album 7 in a row now
    assert not h.allows(2, 9, 9)  # and track 2 was just played


def test_relaxed_rules_scale_to_a_small_library() -> None:
    small = Rules.relaxed(playable=10, artists=2, albums=2)
    assert small.repeat_spins == 5
    assert small.album_cap >= 1000 and small.artist_cap >= 1000
    assert small.album_run >= 1000 and small.artist_run >= 1000  # too few to alternate
    roomy = Rules.relaxed(playable=1000, artists=50, albums=80)
    assert (roomy.repeat_spins, roomy.album_run, roomy.artist_run) == (50, 2, 3)


def test_violations_names_every_broken_rule(clock: FixedClock) -> None:
    rules = Rules()
    oldest_first = [
        played(clock, 1, 5, 7, minutes_ago=9),
        played(clock, 2, 5, 7, minutes_ago=6),
        played(clock, 3, 5, 7, minutes_ago=3),
        played(clock, 1, 5, 8, minutes_ago=0),
    ]
    found = violations(oldest_first, rules)
    assert any("track 1 repeated" in v for v in found)
    assert any("from album 7 in a row" in v for v in found)
    assert any("from artist 5 in a row" in v for v in found)
    assert not any(
        "album 7 over" in v for v in found
    )  # three from it in the window: at the cap, not over


def test_violations_is_empty_for_a_clean_sequence(clock: FixedClock) -> None:
    spins = [played(clock, i, i % 5, i % 7, minutes_ago=60 - i) for i in range(20)]
    assert violations(spins, Rules()) == []
