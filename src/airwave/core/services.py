"""The running instance's shared parts: settings, database, clock and the URL signer."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from airwave.audio.signing import UrlSigner
from airwave.config import Settings
from airwave.core.clock import Clock
from airwave.errors import ApiError
from airwave.store.db import Database, WouldBlock, contention_error, reads_only
from airwave.store.private import private_dir

__all__ = ["Services", "WouldBlock"]


@dataclass
class Services:
    settings: Settings
    database: Database
    clock: Clock = field(default_factory=Clock)
    signer: UrlSigner = field(default=None)  # type: ignore[assignment]  # made from settings when not given

    def __post_init__(self) -> None:
        if self.signer is None:
            self.signer = UrlSigner.open(
                self.settings.data_dir, grace_seconds=self.settings.url_key_grace
            )

    @classmethod
    def open(cls, settings: Settings, clock: Clock | None = None) -> Services:
        """Create the data dir (owner-only), connect, migrate the schema; the signer keeps its
        key there."""
        private_dir(settings.data_dir)
        database = Database(settings.resolved_database_url, settings.database_busy_timeout)
        database.migrate()
        signer = UrlSigner.open(settings.data_dir, grace_seconds=settings.url_key_grace)
        return cls(settings, database, clock or Clock(), signer)

    @staticmethod
    def busy_error(exc: BaseException) -> ApiError | None:
        """The answer for an exception that means the database is too busy (a lock wait ran out)."""
        return contention_error(exc)

    @staticmethod
    def reads_only() -> AbstractContextManager[None]:
        """Within: a database write raises WouldBlock instead of waiting for its lock, and so does
        a PostgreSQL read that runs long (work run on the event loop reads only, and briefly;
        what cannot runs again in a worker thread)."""
        return reads_only()

    @property
    def reads_wait_on_network(self) -> bool:
        """Reads wait for a server (PostgreSQL), not only for this machine's CPU and disk."""
        return not self.database.is_sqlite

    def close(self) -> None:
        self.database.dispose()
