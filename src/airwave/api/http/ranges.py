"""HTTP byte ranges and validators (RFC 9110 §13-14) for one representation of known size: pure
functions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime

_RANGE_SPEC = re.compile(r"\s*(\d*)\s*-\s*(\d*)\s*")
_ETAG = re.compile(r'\s*(W/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)')
MAX_HEADER = 1024  # longer Range / If-* headers are ignored, not parsed


@dataclass(frozen=True)
class ByteRange:
    """Inclusive byte positions [start, end] inside a representation of `size` bytes."""

    start: int
    end: int
    size: int

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    @property
    def content_range(self) -> str:
        return f"bytes {self.start}-{self.end}/{self.size}"


class RangeNotSatisfiable(Exception):
    """A well-formed byte range that lies wholly outside the representation: 416."""

    def __init__(self, size: int) -> None:
        super().__init__(f"bytes */{size}")
        self.size = size


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one range to send, or None for the whole representation.

    A header that is absent, malformed, not in bytes, or asks for several ranges is ignored (RFC
    9110 allows a server to ignore Range); a single range that cannot be satisfied raises
    RangeNotSatisfiable.
    """
    if not header or len(header) > MAX_HEADER:
        return None
    unit, sep, spec = header.partition("=")
    if not sep or unit.strip().lower() != "bytes" or "," in spec:
        return None
    match = _RANGE_SPEC.fullmatch(spec)
    if match is None:
        return None
    first, last = match.groups()
    if first:
        start = int(first)
        end = int(last) if last else size - 1
        if last and end < start:
            return None  # an invalid range-spec: ignore the header
        if start >= size:
            raise RangeNotSatisfiable(size)
        return ByteRange(start, min(end, size - 1), size)
    if not last:
        return None
    suffix = int(last)
    if suffix == 0 or size == 0:
        raise RangeNotSatisfiable(size)
    return ByteRange(max(0, size - suffix), size - 1, size)


def etag_list(header: str) -> list[tuple[bool, str]] | None:
    """(weak, opaque-tag) pairs of an If-None-Match/If-Match value; None for "*" or a malformed
    value."""
    if header.strip() == "*":
        return None
    tags: list[tuple[bool, str]] = []
    pos = 0
    while pos < len(header):
        match = _ETAG.match(header, pos)
        if match is None:
            return []  # malformed: matches nothing
        tags.append((match.group(1) is not None, match.group(2)))
        pos = match.end()
    return tags


def not_modified(
    if_none_match: str | None, if_modified_since: str | None, etag: str, last_modified: float
) -> bool:
    """True when a GET/HEAD may answer 304: weak ETag match, else (without If-None-Match) a date
    test."""
    if if_none_match is not None:
        if len(if_none_match) > MAX_HEADER:
            return False
        tags = etag_list(if_none_match)
        return tags is None or any(_opaque(etag) == tag for _, tag in tags)
    since = _http_date(if_modified_since)
    return since is not None and int(last_modified) <= since


def if_range_holds(if_range: str | None, etag: str, last_modified: float) -> bool:
    """Whether a Range request may be answered with a part: If-Range absent, or a strong match of
    ETag or date."""
    if if_range is None:
        return True
    value = if_range.strip()
    if value.startswith(("W/", '"')):
        return not etag.startswith("W/") and value == etag  # If-Range needs the strong comparison
    date = _http_date(value)
    return date is not None and date == int(last_modified)


def http_date(timestamp: float) -> str:
    """IMF-fixdate, as in Last-Modified."""
    return formatdate(int(timestamp), usegmt=True)


def file_etag(size: int, mtime_ns: int) -> str:
    """A strong validator from size and modification time (what nginx uses, at finer resolution)."""
    return f'"{mtime_ns:x}-{size:x}"'


def _opaque(etag: str) -> str:
    return etag[2:] if etag.startswith("W/") else etag


def _http_date(value: str | None) -> int | None:
    if not value or len(value) > 100:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        return None
    return int(parsed.timestamp())
