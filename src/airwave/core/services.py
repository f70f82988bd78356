"""The running instance's shared parts: settings, database and clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from airwave.config import Settings
from airwave.core.clock import Clock
from airwave.store.db import Database


@dataclass
class Services:
    settings: Settings
    database: Database
    clock: Clock = field(default_factory=Clock)

    @classmethod
    def open(cls, settings: Settings, clock: Clock | None = None) -> "Services":
        """Create the data dir, connect, and migrate the schema to the newest revision."""
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        database = Database(settings.resolved_database_url)
        database.migrate()
        return cls(settings, database, clock or Clock())

    def close(self) -> None:
        self.database.dispose()
