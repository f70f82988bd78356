"""The sound block of the similarity space: a track's sound is drawn towards its album's."""

from __future__ import annotations

import numpy as np

from airwave.core.catalog import space


def unit(rows: list[list[float]]) -> np.ndarray:
    block = np.asarray(rows, np.float32)
    return block / np.linalg.norm(block, axis=1, keepdims=True)


def test_a_track_is_drawn_towards_its_albums_sound() -> None:
    # album 1: two tracks of one artist that sound apart; album 2 alone; album 3 a compilation
    block = unit([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1]])
    album = np.array([1, 1, 2, 3, 3])
    artist = np.array([7, 7, 7, 8, 9])
    drawn = space.album_sound(block, album, artist)
    assert np.allclose(np.linalg.norm(drawn, axis=1), 1.0, atol=1e-6)
    before, after = float(block[0] @ block[1]), float(drawn[0] @ drawn[1])
    assert before == 0.0 and after > 0.8  # the album's tracks now sound alike ...
    assert drawn[0, 0] > drawn[0, 1] and drawn[1, 1] > drawn[1, 0]  # ... each keeping its own bent
    assert np.allclose(drawn[2], block[2])  # a one-track album is its own mean
    assert np.allclose(drawn[3:], block[3:])  # several artists on one album: no common style


def test_tracks_without_a_profile_stay_out_of_the_mean() -> None:
    block = unit([[1, 0], [1, 0]])
    block = np.concatenate([block, np.zeros((1, 2), np.float32)])  # the third is not analysed
    drawn = space.album_sound(block, np.array([1, 1, 1]), np.array([5, 5, 5]))
    assert np.allclose(drawn[:2], block[:2]) and not drawn[2].any()
