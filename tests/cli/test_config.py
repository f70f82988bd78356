"""Settings precedence: defaults < TOML file < AIRWAVE_* environment < command-line flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import Server, assert_error, unique

from airwave.config import load_settings


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in __import__("os").environ if k.startswith("AIRWAVE_")]:
        monkeypatch.delenv(key)
    settings = load_settings()
    assert settings.port == 4533 and settings.host == "127.0.0.1"
    assert settings.session_timeout == 8 * 3600 and settings.keep_logged_in_timeout == 30 * 86400
    assert settings.open_registration is False and settings.default_tier == "free"
    assert settings.resolved_database_url == f"sqlite:///{settings.data_dir / 'airwave.db'}"
    assert settings.tiers["plus"].max_stations == 250


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "airwave.toml"
    toml.write_text(
        'port = 7000\nhost = "0.0.0.0"\nsession_timeout = 60\ntrusted_proxies = ["10.0.0.0/8"]\n'
        "[tiers.free]\nmax_stations = 10\nstation_skip_limit = 3\ndaily_skip_limit = 9\n"
        "ads = true\nreplays = false\nhigh_quality = false\non_demand = false\n"
    )
    monkeypatch.setenv("AIRWAVE_CONFIG_FILE", str(toml))
    monkeypatch.setenv("AIRWAVE_HOST", "127.0.0.2")
    monkeypatch.setenv("AIRWAVE_TIERS__PLUS__MAX_STATIONS", "99")
    settings = load_settings(port=7001)
    assert settings.port == 7001  # flag beats file
    assert settings.host == "127.0.0.2"  # environment beats file
    assert settings.session_timeout == 60  # file beats default
    assert settings.trusted_proxies == ["10.0.0.0/8"]
    assert (
        settings.tiers["free"].max_stations == 10 and settings.tiers["free"].station_skip_limit == 3
    )
    assert settings.tiers["premium"].max_stations == 250  # tiers not in the file keep defaults


def test_bad_values_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        load_settings(trusted_proxies=["not-an-address"])
    with pytest.raises(ValueError):
        load_settings(config_file=tmp_path / "missing.toml")
    with pytest.raises(ValueError):
        load_settings(tiers={"gold": {"max_stations": 1}})


def test_server_reads_a_toml_file(start_server, tmp_path: Path) -> None:
    toml = tmp_path / "server.toml"
    toml.write_text(
        "open_registration = true\npassword_min_length = 12\n\n[tiers.free]\nmax_stations = 7\n"
        "station_skip_limit = 2\ndaily_skip_limit = 5\n"
    )  # the other fields keep defaults
    server: Server = start_server("--config", str(toml))
    api = server.client()
    short = api.call("v1/listener/register", {"username": unique(), "password": "elevenchars"})
    assert_error(short, 400, "INVALID_PASSWORD")
    data = api.register(unique(), "twelve chars ok")
    assert (
        data["config"]["maxStations"],
        data["config"]["stationSkipLimit"],
        data["config"]["dailySkipLimit"],
    ) == (7, 2, 5)
