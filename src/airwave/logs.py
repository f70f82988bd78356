"""Logging set-up: one JSON object per line (or plain text) on stderr."""

from __future__ import annotations

import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


ACCESS = "airwave.access"
access_log = logging.getLogger(ACCESS)


def _json_line(
    ts: datetime, level: str, name: str, msg: str, pid: int | None, extra: dict[str, Any]
) -> str:
    entry = {
        "ts": ts.isoformat(timespec="milliseconds"),
        "level": level,
        "logger": name,
        "msg": msg,
        "pid": pid,  # which worker of `serve --workers N`
    }
    entry.update(extra)
    return orjson.dumps(entry, default=str).decode()


def _text_line(ts: datetime, level: str, name: str, msg: str, extra: dict[str, Any]) -> str:
    extras = " ".join(f"{k}={v}" for k, v in extra.items())
    line = f"{ts.strftime('%H:%M:%S')} {level:<7} {name}: {msg}"
    return f"{line} {extras}" if extras else line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        if record.exc_info:
            extra["exc"] = self.formatException(record.exc_info)
        return _json_line(
            datetime.fromtimestamp(record.created, UTC),
            record.levelname.lower(),
            record.name,
            record.getMessage(),
            record.process,
            extra,
        )


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        line = _text_line(datetime.now(), record.levelname, record.name, record.getMessage(), extra)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


_handler: logging.StreamHandler[Any] | None = None  # the one configure() installed


class _Pid:
    """This process's id, read again in a forked child: os.getpid() is a system call, and the
    access log names the process on every line."""

    def __init__(self) -> None:
        self.value = os.getpid()
        os.register_at_fork(after_in_child=self.renew)

    def renew(self) -> None:
        self.value = os.getpid()


_pid = _Pid()


def request(fields: dict[str, Any]) -> None:
    """The access log's line for one request, as `access_log.info("request", extra=fields)`
    writes it, without a LogRecord and the handlers' dispatch (a fifth of a small call's cost)
    while the handler configure() installed is still the only one; through logging otherwise."""
    handler = _handler
    root = logging.root
    if (
        handler is None
        or access_log.handlers
        or access_log.disabled
        or root.handlers != [handler]
        or not access_log.isEnabledFor(logging.INFO)
    ):
        access_log.info("request", extra=fields)
        return
    if isinstance(handler.formatter, JsonFormatter):
        line = _json_line(datetime.now(UTC), "info", ACCESS, "request", _pid.value, fields)
    else:
        line = _text_line(datetime.now(), "INFO", ACCESS, "request", fields)
    _write(handler, line)


def _write(handler: logging.StreamHandler[Any], line: str) -> None:
    """As StreamHandler.emit writes a formatted line, errors handled as it handles them."""
    with handler.lock:  # type: ignore[union-attr]
        try:
            stream = handler.stream
            stream.write(line + handler.terminator)
            if not getattr(stream, "line_buffering", False):  # else the write flushed it
                handler.flush()
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging's own rule: a failed write never fails the caller
            handler.handleError(logging.makeLogRecord({"msg": line}))


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
    global _handler  # noqa: PLW0603 - the direct path of request() follows the set-up
    _handler = handler
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    # alembic names each of its plugins as it loads them, on every start: not news to an operator
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    # faiss names, at every start of a process that loads it, each CPU build it could not load
    # ("Could not load library with AVX512 support") before the one it could: not news either
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
