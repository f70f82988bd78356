"""A library analysed by an older sound analysis is re-analysed, and the older profiles are never
mixed into the similarity space or the focus traits meanwhile."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from airwave.core.catalog import similar, space
from airwave.library import profiler
from airwave.library.analysis import FEATURE_DIM, PROFILE_VERSION
from airwave.store.db import Database
from airwave.store.models import TrackProfile

OLD_DIM = 37  # the vector of PROFILE_VERSION 1


def test_older_profiles_are_pending_and_left_out_of_the_space(
    database: Database, db: Session, rows
) -> None:
    old, current = rows.track(), rows.track()
    for track, version, dim in (
        (old, PROFILE_VERSION - 1, OLD_DIM),
        (current, PROFILE_VERSION, FEATURE_DIM),
    ):
        db.add(
            TrackProfile(
                track_id=track.id,
                version=version,
                fingerprint=track.fingerprint,
                profile=json.dumps({"v": version, "tempo": 120.0}),
                features=np.ones(dim, np.float32).tobytes(),
                gain_db=0.0,
                analyzed_at=rows.now,
            )
        )
    db.flush()
    catalogue = space.load_catalogue(db, FEATURE_DIM)
    assert catalogue.features is not None
    by_id = dict(zip(catalogue.ids.tolist(), catalogue.features))
    assert np.isnan(by_id[old.id]).all() and np.isfinite(by_id[current.id]).all()
    db.commit()
    assert [job.track_id for job in profiler.pending(database)] == [old.id]
    # an old profile says nothing about the sound, rather than something the features no longer say
    traits = similar.focus_traits(
        json.dumps({"v": PROFILE_VERSION - 1, "tempo": 150.0, "rhythm_strength": 0.9}),
        ["Rock"],
        None,
        None,
        False,
    )
    assert traits == ["Rock roots"]


def _profile(**overrides: object) -> Any:
    """A plain mid-range sound profile, with `overrides`."""
    from airwave.library.analysis import SoundProfile

    fields = {f: 0.0 for f in SoundProfile.__dataclass_fields__}
    base = fields | {
        "tempo": 120.0,
        "mfcc": (0.0,) * 13,
        "mfcc_std": (0.0,) * 13,
        "chroma": (1 / 12,) * 12,
        "key": 0,
        "mode": "major",
        "centroid_hz": 1500.0,
        "loudness_lufs": -16.0,
        "dynamics_db": 2.0,
        "onset_rate": 3.0,
        "contrast": (25.0,) * 7,
        "band_std": (0.0,) * 8,
        "band_flux": (0.0,) * 8,
        "rhythm_pattern": (0.0,) * 8,
        "modulation": (-1.0,) * 40,
        "flux": (0.5, 1.0, 2.0, 0.4),
        "mfcc_delta": (1.0,) * 13,
        "harmonic_change": (0.12, 0.1, 0.2),
    }
    return SoundProfile(**(base | overrides))


def _traits(profile: Any) -> list[str]:
    return similar.focus_traits(profile.to_json(), [], None, None, False)


def test_focus_traits_say_what_the_new_descriptors_measured() -> None:
    told = {
        "busy": _traits(_profile(onset_rate=5.2, contrast=(18.0,) * 7)),
        "calm": _traits(_profile(onset_rate=1.2, contrast=(34.0,) * 7)),
        "middle": _traits(_profile()),
    }
    assert "busy, rapid notes (5.2 onsets a second)" in told["busy"]
    assert "dense, saturated texture" in told["busy"]
    assert "sparse, unhurried notes" in told["calm"] and "clear, tonal instruments" in told["calm"]
    assert not {t for t in told["middle"] if "notes" in t or "texture" in t or "tonal" in t}


def test_focus_traits_tell_held_harmony_from_shifting_harmony() -> None:
    told = {c: _traits(_profile(harmonic_change=(c, c, c))) for c in (0.03, 0.12, 0.25)}
    assert "steady, held harmony" in told[0.03]
    assert "restless, shifting harmony" in told[0.25]
    assert not {t for t in told[0.12] if "harmony" in t}
