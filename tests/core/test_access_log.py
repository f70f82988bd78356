"""The access log's line is written without a LogRecord while the handler `logs.configure`
installed is the only one: the same line as logging writes for it, in both formats; any other
handler set up later gets the lines through logging."""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Callable, Iterator

import orjson
import pytest

from airwave import logs

FIELDS = {
    "request_id": "0123456789abcdef",
    "method": "POST",
    "path": "/api/v1/station/getStations",
    "status": 200,
    "bytes": 71,
    "duration_ms": 0.31,
    "client": "127.0.0.1",
    "listener_id": None,
}


@pytest.fixture
def configure() -> Iterator[Callable[[str, str], io.StringIO]]:
    """`logs.configure`, its handler then writing to a string instead of stderr."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logs._handler)

    def set_up(level: str, fmt: str) -> io.StringIO:
        logs.configure(level, fmt)
        out = io.StringIO()
        assert logs._handler is not None
        logs._handler.setStream(out)
        return out

    yield set_up
    root.handlers[:], level, logs._handler = saved
    root.setLevel(level)


def _both(stream: io.StringIO) -> tuple[str, str]:
    logs.request(FIELDS)
    logs.access_log.info("request", extra=FIELDS)  # the same line through logging
    direct, through_logging = stream.getvalue().splitlines()
    return direct, through_logging


def test_json_lines_match_what_logging_writes(configure) -> None:  # noqa: ANN001
    stream = configure("info", "json")
    direct, through_logging = (orjson.loads(line) for line in _both(stream))
    assert list(direct) == list(through_logging)  # the same keys in the same order
    assert direct.pop("ts")[:19] == through_logging.pop("ts")[:19]
    assert direct == through_logging


def test_text_lines_match_what_logging_writes(configure) -> None:  # noqa: ANN001
    stream = configure("info", "text")
    direct, through_logging = _both(stream)
    assert direct[8:] == through_logging[8:]  # after the time of day
    assert re.match(r"\d\d:\d\d:\d\d INFO    airwave.access: request request_id=", direct)


def test_another_handler_gets_the_lines_through_logging(configure) -> None:  # noqa: ANN001
    stream = configure("info", "json")
    seen: list[logging.LogRecord] = []
    extra = logging.Handler()
    extra.emit = seen.append  # type: ignore[method-assign]
    logging.getLogger().addHandler(extra)
    logs.request(FIELDS)
    assert [r.getMessage() for r in seen] == ["request"] and seen[0].status == 200  # type: ignore[attr-defined]
    assert orjson.loads(stream.getvalue())["path"] == FIELDS["path"]


def test_a_quieter_level_writes_no_access_line(configure) -> None:  # noqa: ANN001
    stream = configure("warning", "json")
    logs.request(FIELDS)
    assert stream.getvalue() == ""


def test_a_forked_process_names_itself_in_its_lines(configure) -> None:  # noqa: ANN001
    """The process id is kept, not asked for on every line: a forked worker reads its own."""
    stream = configure("info", "json")
    logs.request(FIELDS)
    assert orjson.loads(stream.getvalue())["pid"] == os.getpid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        try:
            logs.request(FIELDS)
            os.write(write, stream.getvalue().splitlines()[-1].encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        line = pipe.read()
    os.waitpid(child, 0)
    assert orjson.loads(line)["pid"] == child
