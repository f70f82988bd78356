"""One Settings object: defaults < TOML file < AIRWAVE_* environment < CLI flags."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

Tier = Literal["free", "plus", "premium"]
TIERS: tuple[str, ...] = ("free", "plus", "premium")

ADS_DIR = "ads"  # under data_dir: campaign audio and art copies


class TierPolicy(BaseModel):
    """What one tier allows (spec §6.6); published to clients in the login `config`."""

    max_stations: int = Field(ge=1)
    station_skip_limit: int = Field(ge=0, description="skips per station per hour; 0 = unlimited")
    daily_skip_limit: int = Field(ge=0, description="skips per day; 0 = unlimited")
    monthly_listening_cap_hours: int = Field(0, ge=0, description="0 = no cap")
    ads: bool
    replays: bool
    high_quality: bool
    on_demand: bool


def _default_tiers() -> dict[str, TierPolicy]:
    return {
        "free": TierPolicy(
            max_stations=100,
            station_skip_limit=6,
            daily_skip_limit=24,
            ads=True,
            replays=False,
            high_quality=False,
            on_demand=False,
        ),
        "plus": TierPolicy(
            max_stations=250,
            station_skip_limit=0,
            daily_skip_limit=0,
            ads=False,
            replays=True,
            high_quality=True,
            on_demand=False,
        ),
        "premium": TierPolicy(
            max_stations=250,
            station_skip_limit=0,
            daily_skip_limit=0,
            ads=False,
            replays=True,
            high_quality=True,
            on_demand=True,
        ),
    }


class TunerPartner(BaseModel):
    """A partner of the JSON tuner interface: the credentials and Blowfish keys a client ships.
    They are public (every client carries them); they name the client, they do not protect."""

    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=128)
    device_model: str = Field(min_length=1, max_length=64)
    encrypt_key: str = Field(
        min_length=4, max_length=56, description="what the client encrypts request bodies with"
    )
    decrypt_key: str = Field(
        min_length=4, max_length=56, description="what the client decrypts syncTime with"
    )


def _default_partners() -> list[TunerPartner]:
    """The partner sets published clients ship (the public record's partner table)."""
    rows = [
        (
            "android",
            "AC7IBG09A3DTSYM4R41UJWL07VLN8JI7",
            "android-generic",
            "6#26FRL$ZWD",
            "R=U!LH$O2B#",
        ),
        (
            "iphone",
            "P2E4FC0EAD3*878N92B2CDp34I0B1@388137C",
            "IP01",
            "721^26xE22776",
            "20zE1E47BE57$51",
        ),
        (
            "pandora one",
            "TVCKIBGS9AO9TSYLNNFUML0743LH82D",
            "D01",
            "2%3WCL*JU$MP]4",
            "U#IO$RZPAB%VX2",
        ),
        (
            "android-gtv",
            "^bs2*tzZAM47tvmAvV1GZS^TH1SBW?8o",
            "gtv2-foster",
            "MCf5Ljj*V?Fr4cF4",
            "2lSj00N1fKYfOk8x",
        ),
        ("palm", "IUC7IBG09A3JTSYM4N11UJWL07VLH8JP0", "pre", "%526CBL$ZU3", "E#U$MY$O2B="),
        (
            "winmo",
            "ED227E10a628EB0E8Pm825Dw7114AC39",
            "VERIZON_MOTOQ9C",
            "v93C8C2s12E0EBD",
            "7D671jt0C5E5d251",
        ),
        (
            "windowsgadget",
            "EVCCIBGS9AOJTSYMNNFUML07VLH8JYP0",
            "WG01",
            "%22CML*ZU$8YXP[1",
            "E#IO$MYZOAB%FVR2",
        ),
    ]
    return [
        TunerPartner(username=u, password=p, device_model=d, encrypt_key=e, decrypt_key=k)
        for u, p, d, e, k in rows
    ]


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("airwave", appauthor=False))


class Settings(BaseSettings):
    """Everything an operator can set. Env names are AIRWAVE_<FIELD>, nested with `__`."""

    model_config = SettingsConfigDict(
        env_prefix="AIRWAVE_", env_nested_delimiter="__", extra="ignore", validate_default=True
    )

    config_file: Path | None = Field(None, description="TOML file with any of these settings")
    data_dir: Path = Field(default_factory=default_data_dir)
    database_url: str | None = Field(
        None, description="default: SQLite file airwave.db in data_dir"
    )
    database_busy_timeout: float = Field(
        5.0,
        gt=0,
        description="seconds a write waits for a database lock before answering 503 READONLY_MODE",
    )
    host: str = "127.0.0.1"
    port: int = Field(4533, ge=0, le=65535)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    plain_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="with TLS, also serve plain HTTP on this port (same host): pianobar and "
        "pydora send most tuner calls over plain HTTP and pianobar plays only http:// audio",
    )
    plain_url: str | None = Field(
        None,
        description="the plain-HTTP base URL tuner clients reach (behind a reverse proxy); "
        "default: the request's host with plain_port",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list, description="addresses/networks whose X-Forwarded-* headers count"
    )
    public_url: str | None = Field(None, description="base URL clients use, for links and mail")
    header_timeout: float = Field(
        10.0, gt=0, description="seconds for the TLS handshake and for each request head"
    )
    keep_alive_timeout: float = Field(
        5.0, gt=0, description="seconds an idle connection stays open between requests"
    )
    max_connections: int = Field(
        0, ge=0, description="client connections at once; 0 = descriptor limit less a quarter"
    )
    shutdown_grace: float = Field(
        10.0, gt=0, description="seconds requests in flight get to finish after SIGTERM"
    )
    shutdown_drain: float = Field(
        0.0,
        ge=0,
        le=300,
        description="seconds after SIGTERM during which /healthz answers 503 while every request "
        "is still served, so that a balancer takes this host out before it stops accepting",
    )

    library_dirs: list[Path] = Field(default_factory=list, description="music folders to scan")
    scan_workers: int = Field(0, ge=0, description="tag-reading processes; 0 = one per CPU core")
    watch_library: bool = Field(False, description="rescan when files under the library change")

    audio_url_lifetime: int = Field(
        12 * 3600, ge=60, description="seconds an audioURL and its receipt URLs live"
    )
    url_key_grace: int = Field(
        24 * 3600, ge=0, description="seconds a rotated URL-signing key still verifies"
    )
    transcode_cache_mb: int = Field(
        2048, ge=0, description="size bound of data_dir/cache/audio (transcodes)"
    )
    transcode_workers: int = Field(
        0, ge=0, description="transcodes running at once; 0 = two per CPU core"
    )
    system_lame: bool = Field(
        True, description="encode MP3 with the system's libmp3lame when installed (faster)"
    )

    session_timeout: int = Field(
        8 * 3600, ge=1, description="seconds of inactivity before a token expires"
    )
    keep_logged_in_timeout: int = Field(30 * 86400, ge=1, description="same, with keepLoggedIn")
    open_registration: bool = False
    readonly_mode: bool = False
    default_tier: Tier = "free"
    tiers: dict[str, TierPolicy] = Field(default_factory=_default_tiers)
    tuner_enabled: bool = Field(
        True,
        description="serve the JSON tuner interface (pianobar, pydora, Pithos) at /services/json/",
    )
    tuner_partners: list[TunerPartner] = Field(
        default_factory=_default_partners,
        description="partners the tuner interface accepts; add your own set to the list",
    )
    password_min_length: int = Field(8, ge=1)
    password_hash_memory_kib: int = Field(
        65536,
        ge=1024,
        le=4 * 1024 * 1024,
        description="memory of one Argon2id password hash (KiB); lower it on small devices; "
        "stored hashes move to a new cost at their next login",
    )
    password_hash_iterations: int = Field(
        3, ge=1, le=50, description="passes of one Argon2id password hash"
    )
    minimum_age: int = Field(13, ge=0)

    anonymous_login: bool = Field(
        False, description="allow auth/anonymousLogin: throw-away free listeners"
    )
    anonymous_idle_timeout: int = Field(
        86400,
        ge=60,
        description="seconds of inactivity after which an anonymous listener is deleted",
    )

    smtp_host: str | None = Field(
        None, description="mail server for password reset mails; unset = no mail"
    )
    smtp_port: int = Field(587, ge=1, le=65535)
    smtp_security: Literal["starttls", "ssl", "none"] = Field(
        "starttls", description="starttls (port 587), ssl (implicit TLS, port 465) or none"
    )
    smtp_username: str | None = Field(None, description="SMTP AUTH user; unset = no authentication")
    smtp_password: str | None = None
    smtp_from: str = Field(
        "Airwave <airwave@localhost>", description="From: of the mails Airwave sends"
    )
    smtp_timeout: float = Field(10.0, gt=0, description="seconds to wait for the mail server")
    smtp_verify_tls: bool = Field(True, description="check the mail server's certificate")
    password_reset_lifetime: int = Field(
        3600, ge=60, description="seconds a password reset link stays valid"
    )
    password_reset_limit: int = Field(
        3,
        ge=1,
        description="reset mails per username (and 10x per client address) "
        "per password_reset_window",
    )
    password_reset_window: int = Field(3600, ge=1)

    ad_interval_minutes: float = Field(
        15.0,
        gt=0,
        description="minutes of listening between two ads for listeners whose tier has ads",
    )
    ad_broken_threshold: int = Field(
        3, ge=1, description="brokenAd reports after which an ad stops being served"
    )

    login_free_failures: int = Field(
        5, ge=1, description="failed logins (or wrong PINs) per account and device before back-off"
    )
    login_backoff_base: float = Field(
        1.0, gt=0, description="seconds of the first back-off delay; each failure doubles it"
    )
    login_backoff_max: int = Field(900, ge=1, description="longest back-off delay, in seconds")
    login_window: int = Field(
        900,
        ge=1,
        description="seconds after the last delay before an account's failures are "
        "forgotten; also the window of login_max_accounts_per_address",
    )
    login_max_accounts_per_address: int = Field(
        50, ge=1, description="distinct accounts failing logins from one address per login_window"
    )
    device_cookie_lifetime: int = Field(
        365 * 86400, ge=60, description="seconds a device cookie (a past successful login) counts"
    )
    # Deprecated names of login_free_failures and login_max_accounts_per_address, still honoured.
    login_max_failures_per_user: int | None = Field(
        None, ge=1, description="deprecated: login_free_failures"
    )
    login_max_failures_per_address: int | None = Field(
        None, ge=1, description="deprecated: login_max_accounts_per_address"
    )

    housekeeping_interval: int = Field(
        600, ge=1, description="seconds between purges of expired sessions"
    )

    workers: int = Field(
        0, ge=0, le=256, description="server processes sharing the port; 0 = one per CPU core"
    )
    node_name: str | None = Field(
        None,
        max_length=120,
        description="this host's name in /healthz, logs and the cluster's members; "
        "default: the host name",
    )
    lease_ttl: float = Field(
        15.0,
        ge=1,
        le=600,
        description="seconds a role (housekeeping, library scans) stays with a process that "
        "stopped renewing it before another takes it over; renewed every quarter of it",
    )
    metrics_token: str | None = Field(
        None,
        min_length=16,
        description="bearer token that opens /metrics to any address; unset = loopback only",
    )

    radio_rules: Literal["strict", "relaxed"] = Field(
        "strict", description="relaxed: separation windows scaled to a small library's size"
    )
    fragment_limit: int = Field(
        40, ge=1, description="getFragment calls per listener per fragment_window"
    )
    fragment_window: int = Field(600, ge=1, description="seconds over which fragment_limit counts")
    analysis_workers: int = Field(
        0, ge=0, description="sound-analysis processes; 0 = one per CPU core"
    )
    analyze_audio: bool = Field(
        True, description="compute sound profiles during scans (stations use them)"
    )
    engine_seed: int | None = Field(
        None, description="seed the station engine's choices (tests, benchmarks)"
    )

    log_level: str = "info"
    log_format: Literal["json", "text"] = "json"
    access_log: bool = True

    @field_validator("tiers", mode="before")
    @classmethod
    def _merge_tiers(cls, value: Any) -> Any:
        """Any subset of a tier's fields may be given; the rest keep their defaults."""
        if not isinstance(value, dict):
            return value
        unknown = set(value) - set(TIERS)
        if unknown:
            raise ValueError(f"unknown tier(s) {sorted(unknown)}; tiers are {', '.join(TIERS)}")
        merged: dict[str, Any] = {
            name: policy.model_dump() for name, policy in _default_tiers().items()
        }
        for name, fields in value.items():
            merged[name].update(fields.model_dump() if isinstance(fields, TierPolicy) else fields)
        return merged

    @model_validator(mode="after")
    def _old_login_names(self) -> Settings:
        """The old throttling names still work (unless the new names are given too)."""
        given = self.model_fields_set
        old_user = self.login_max_failures_per_user
        old_address = self.login_max_failures_per_address
        if old_user is not None and "login_free_failures" not in given:
            self.login_free_failures = old_user
        if old_address is not None and "login_max_accounts_per_address" not in given:
            self.login_max_accounts_per_address = old_address
        return self

    @field_validator("trusted_proxies", mode="after")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for item in value:
            ipaddress.ip_network(item, strict=False)
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path: Any = None
        if isinstance(init_settings, InitSettingsSource):
            path = init_settings.init_kwargs.get("config_file")
        path = path or os.environ.get("AIRWAVE_CONFIG_FILE")
        if path:
            if not Path(path).is_file():
                raise ValueError(f"config file {path} does not exist")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(path)))
        return tuple(sources)

    @property
    def ads_dir(self) -> Path:
        """Where the operator's ad audio and art copies live (backups carry it)."""
        return self.data_dir / ADS_DIR

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'airwave.db'}"

    def tier(self, name: str) -> TierPolicy:
        return self.tiers.get(name) or self.tiers["free"]


def load_settings(**overrides: Any) -> Settings:
    """Settings with CLI overrides on top; None means 'not given on the command line'."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
