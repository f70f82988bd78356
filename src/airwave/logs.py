"""Logging set-up: one JSON object per line (or plain text) on stderr."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

import orjson

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "pid": record.process,  # which worker of `serve --workers N`
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(f"{k}={v}" for k, v in record.__dict__.items() if k not in _STANDARD)
        line = (
            f"{datetime.now().strftime('%H:%M:%S')} {record.levelname:<7} {record.name}: "
            f"{record.getMessage()}"
        )
        line = f"{line} {extras}" if extras else line
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(level: str = "info", fmt: str = "json") -> None:
    # Neither format prints the caller's file and line, the thread or the process name: not
    # gathering them makes each record (one per request in the access log) cheaper.
    logging._srcfile = None  # the documented switch (logging HOWTO, "Optimization")
    logging.logThreads = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    # alembic names each of its plugins as it loads them, on every start: not news to an operator
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
