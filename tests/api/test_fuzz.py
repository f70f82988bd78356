"""Spec §1-4 under fuzzing: whatever a client sends, the answer is never a 500 and every
non-200 answer is exactly the §4 envelope, with the HTTP status of the error table.

Requests go over a real socket to one server per backend. Hypothesis keeps failing examples
in its database (.hypothesis/), so a failure replays on the next run; set
AIRWAVE_FUZZ_EXAMPLES to fuzz longer (the default keeps each test well under a minute).
"""

from __future__ import annotations

import json
import os
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, get_args
from urllib.parse import quote, unquote

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support import Server, assert_error, unique

from airwave.api.endpoints import registry
from airwave.api.registry import Endpoint
from airwave.errors import ErrorCode

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only

EXAMPLES = int(os.environ.get("AIRWAVE_FUZZ_EXAMPLES", "200"))
MAX_BODY = 1024 * 1024
SESSION_COOKIE = "airwave_session"

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # new inputs each run; failures are kept in (and replayed from) the example database
    derandomize=False,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)

ENDPOINTS: list[Endpoint] = registry.endpoints()


# --------------------------------------------------------------------------------------
# JSON that can be wrong on purpose


class Raw(str):
    """A JSON fragment written verbatim; it may be invalid JSON on purpose."""


class Pairs(tuple):
    """A JSON object as (key, value) pairs, so that keys can repeat."""


class _RealToken:
    """Stands for the live auth token of the fuzzer's listener; filled in when sent."""

    def __repr__(self) -> str:
        return "REAL_TOKEN"


REAL_TOKEN = _RealToken()
KNOWN_USER = "fzknown"  # a second listener of the fuzz server, whose name the fuzz may log in with
KNOWN_PASSWORD = "correct horse battery"


def dump(value: Any, ascii_only: bool, token: str) -> str:
    if isinstance(value, Raw):
        return str(value)
    if value is REAL_TOKEN:
        return json.dumps(token)
    if isinstance(value, Pairs):
        return (
            "{"
            + ",".join(
                f"{json.dumps(k, ensure_ascii=ascii_only)}:{dump(v, ascii_only, token)}"
                for k, v in value
            )
            + "}"
        )
    if isinstance(value, dict):
        return dump(Pairs(value.items()), ascii_only, token)
    if isinstance(value, list):
        return "[" + ",".join(dump(v, ascii_only, token) for v in value) + "]"
    return json.dumps(
        value, ensure_ascii=ascii_only
    )  # floats may come out as NaN/Infinity: invalid JSON


def to_bytes(text: str) -> bytes:
    # Lone surrogates become invalid UTF-8 (when not escaped as \\udXXX by ensure_ascii).
    return text.encode("utf-8", "surrogatepass")


RAW_FRAGMENTS = [
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "1e-400",
    "1E2",
    "1.0",
    "-0",
    "0e0",
    "01",
    "+1",
    "0x10",
    "123456789012345678901234567890123456789",
    '"\\ud800"',
    '"\\udfff"',
    '"a\\ud83d"',
    '"\\ud83d\\ude00"',
    '"\\udc00\\ud800"',
    '"\\ud800\\u0041"',
    '"\\u0000"',
    '"a\\\\u0000"',
    '"\\u0001\\u001f\\u007f"',
    '"\\uffff"',
    '"\\ufeff"',
    '"\\u202e"',
    '"\\x41"',
    '"\\U0001F600"',
    '"\\u12"',
    '"' + "\\\\" * 600 + '"',
    "'single'",
    "true",
    "True",
    "null",
    "None",
    "{}",
    "[]",
    '{"a":1,"a":{"b":2}}',
    "[1,]",
    "{,}",
    '"unterminated',
    "\u00e9",
    '"\xe9"',
    "",
]
_LONG_FRAGMENTS = {
    "big-negative": lambda: "-" + "9" * 400,
    "big-int": lambda: "9" * 4000,
    "long-fraction": lambda: "1." + "0" * 300,
    "deep-list": lambda: "[" * 300 + "]" * 300,
    "very-deep-list": lambda: "[" * 5000 + "]" * 5000,
    "deep-object": lambda: '{"a":' * 300 + "1" + "}" * 300,
    "backslashes": lambda: '"' + "\\\\" * 600 + '"',
}
# Long or deep fragments, built on demand so that reprs stay short.
RAW_BUILT = st.sampled_from(sorted(_LONG_FRAGMENTS)).map(lambda name: _LONG_FRAGMENTS[name]())
RAW = st.one_of(st.sampled_from(RAW_FRAGMENTS), RAW_BUILT).map(Raw)

EDGE_INTS = [
    0,
    -1,
    1,
    2,
    255,
    1899,
    1900,
    2**15,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    2**64,
    10**30,
    -(10**30),
]
EDGE_FLOATS = [
    0.0,
    -0.0,
    0.5,
    1.0,
    2.5,
    -1.5,
    1e308,
    -1e308,
    5e-324,
    1e16,
    2.0**63,
    float("nan"),
    float("inf"),
]
EDGE_TEXT = [
    "",
    " ",
    "\t",
    "\n",
    "NaN",
    "nan",
    "Infinity",
    "-Infinity",
    "1e400",
    "0x10",
    "1_000",
    "0",
    "-1",
    "true",
    "null",
    "[]",
    "{}",
    "١٢٣",
    "𝟙𝟚𝟛",
    "ＡＢＣ",
    "ß",
    "İstanbul",
    "\u212a",
    "a\u0301",
    "\u202eevil",
    "\ufeffbom",
    "\u0000",
    "a\u0000b",
    "\x7f",
    "\ud800",
    "\udfff",
    "a\ud83d",
    "'; DROP TABLE listener; --",
    "%s%s%n",
    "../../etc/passwd",
    "male",
    "female",
    "nonbinary",
    "unspecified",
    "Non-Binary",
    "94612",
    "SW1A 1AA",
    "mcS1",
    "ST:0:1",
]
# Lengths around the limits (64 username, 256/1024 max_length, 1 MiB body), built lazily to keep
# reprs short.
LONG_TEXT = st.tuples(
    st.sampled_from(["x", "é", "😀", "\ud800", " "]),
    st.sampled_from([63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 70_000]),
).map(lambda p: p[0] * p[1])

ANY_CHAR = st.characters(exclude_categories=())  # includes lone surrogates and control characters
TEXT = st.one_of(
    st.text(max_size=30),
    st.text(ANY_CHAR, max_size=30),
    st.sampled_from(EDGE_TEXT),
    LONG_TEXT,
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=4), st.integers(1, 3000)),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(EDGE_INTS),
    st.sampled_from([300, 1000, 4000]).map(lambda digits: 10**digits),
    st.floats(),
    st.sampled_from(EDGE_FLOATS),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(TEXT, children, max_size=5),
    ),
    max_leaves=20,
)
WEIRD_VALUES = st.one_of(
    SCALARS,
    JSON_VALUES,
    RAW,
    st.just(REAL_TOKEN),
)


def _types_of(annotation: Any) -> set[type]:
    args = get_args(annotation)
    if args:
        return {t for a in args for t in _types_of(a)}
    return {annotation} if isinstance(annotation, type) else set()


# Per known field: values that pass validation, and values a client might get slightly wrong.
# Usernames are never the fuzzer's own listener, whose token must stay usable.
# Letters whose case-folded (or NFKC) form is longer than the letter: 'ß' -> 'ss', 'ﬁ' -> 'fi', ...
EXPANDING_NAMES = st.tuples(
    st.sampled_from(["ß", "ẞ", "İ", "ǰ", "ΐ", "ŉ", "ﬁ", "㎒"]), st.integers(20, 64)
).map(lambda p: p[0] * p[1])
VALID: dict[str, st.SearchStrategy[Any]] = {
    "username": st.one_of(
        st.from_regex(r"fz[a-z0-9]{6,10}", fullmatch=True),
        st.just(KNOWN_USER),
        st.text(st.characters(categories=["L", "N"]), min_size=2, max_size=64),
        EXPANDING_NAMES,
    ),
    "password": st.one_of(
        st.just(KNOWN_PASSWORD), st.from_regex(r"[A-Za-z0-9 !?.-]{8,30}", fullmatch=True)
    ),
    "existingAuthToken": st.just(REAL_TOKEN),
    "birthYear": st.integers(1950, 2005),
    "zipCode": st.one_of(st.from_regex(r"[0-9]{5}", fullmatch=True), st.just("SW1A 1AA")),
    "gender": st.sampled_from(
        ["male", "female", "nonbinary", "unspecified", "Non-Binary", " male "]
    ),
    "pageSize": st.integers(1, 1000),
    "startIndex": st.integers(0, 100),
}
SLIGHTLY_WRONG: dict[str, st.SearchStrategy[Any]] = {
    "username": st.one_of(
        TEXT, st.just(KNOWN_USER.upper()), st.from_regex(r"[^\s]{0,3}|[a-z]{60,70}", fullmatch=True)
    ),
    "password": st.one_of(
        st.text(max_size=8), st.sampled_from(["password", "fzknown!", "aaaaaaaaaaaa", " " * 9])
    ),
    "existingAuthToken": TEXT,
    "birthYear": st.integers(1800, 2100),
    "zipCode": st.from_regex(r"[A-Za-z0-9 \-]{0,12}", fullmatch=True),
    "gender": st.sampled_from(["other", "", "MALE", "m", "non binary"]),
    "pageSize": st.sampled_from([-2, -1, 0, 1001, 1002]),
    "startIndex": st.sampled_from([-2, -1, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1]),
}


def _by_type(annotation: Any) -> st.SearchStrategy[Any]:
    types = _types_of(annotation)
    options: list[st.SearchStrategy[Any]] = []
    if bool in types:
        options.append(st.booleans())
    if int in types:
        options.append(st.integers())
    if str in types:
        options.append(TEXT)
    if type(None) in types:
        options.append(st.none())
    return st.one_of(options) if options else JSON_VALUES


def often(draw: st.DrawFn, percent: int) -> bool:
    """A biased coin, so that most requests get far enough for the next mistake to matter."""
    return draw(st.integers(0, 99)) < percent


@dataclass(frozen=True)
class FieldValues:
    alias: str
    valid: st.SearchStrategy[Any]
    wrong: st.SearchStrategy[Any]

    def draw(self, draw: st.DrawFn) -> Any:
        roll = draw(st.integers(0, 99))
        if roll < 70:
            return draw(self.valid)
        return draw(self.wrong) if roll < 88 else draw(WEIRD_VALUES)


def fields_of(endpoint: Endpoint) -> list[FieldValues]:
    out = []
    for name, info in endpoint.request.model_fields.items():
        alias = info.alias or name
        typed = _by_type(info.annotation)
        out.append(FieldValues(alias, VALID.get(alias, typed), SLIGHTLY_WRONG.get(alias, typed)))
    return out


@st.composite
def schema_object(draw: st.DrawFn, endpoint: Endpoint) -> Pairs:
    """An object built from the endpoint's request fields, some right, some wrong, some repeated."""
    fields = fields_of(endpoint)
    pairs: list[tuple[str, Any]] = []
    for values in fields:
        if often(draw, 75):  # most fields present, most of them valid
            pairs.append((values.alias, values.draw(draw)))
    for _ in range(
        draw(st.integers(0, 2)) if often(draw, 25) else 0
    ):  # unknown extras and repeated keys
        if fields and draw(st.booleans()):
            values = draw(st.sampled_from(fields))
            pairs.append((values.alias, values.draw(draw)))
        else:
            pairs.append((draw(TEXT), draw(WEIRD_VALUES)))
    return Pairs(draw(st.permutations(pairs)) if often(draw, 20) else pairs)


# --------------------------------------------------------------------------------------
# Whole requests


@dataclass
class Body:
    """A body before the live token is known: a JSON value, a raw fragment or raw bytes."""

    value: Any = None
    raw: bytes | None = None
    ascii_only: bool = True
    bom: bool = False
    chunked: bool = False

    def render(self, token: str) -> bytes:
        data = (
            self.raw if self.raw is not None else to_bytes(dump(self.value, self.ascii_only, token))
        )
        return (b"\xef\xbb\xbf" + data) if self.bom else data

    def __repr__(self) -> str:
        data = self.render("REAL_TOKEN")
        shown = data if len(data) <= 300 else data[:300] + b"...(%d bytes)" % len(data)
        return f"Body({shown!r}, chunked={self.chunked})"


@st.composite
def bodies(draw: st.DrawFn, endpoint: Endpoint | None, clean: bool = False) -> Body:
    if endpoint is not None and (clean or often(draw, 75)):
        kind = "schema"
    else:
        kind = draw(st.sampled_from(["json", "raw-fragment", "bytes", "empty", "huge"]))
    if kind == "schema":
        assert endpoint is not None
        body = Body(value=draw(schema_object(endpoint)))
    elif kind == "json":
        body = Body(value=draw(JSON_VALUES))
    elif kind == "raw-fragment":
        body = Body(value=draw(RAW))
    elif kind == "bytes":
        body = Body(raw=draw(st.binary(max_size=200)))
    elif kind == "empty":
        body = Body(raw=draw(st.sampled_from([b"", b" ", b"\r\n\t ", b"\x00"])))
    elif often(draw, 30):  # around the 1 MiB limit, in valid JSON
        size = MAX_BODY + draw(st.sampled_from([-20, -12, -11, -10, 0, 1, 100, MAX_BODY]))
        body = Body(raw=b'{"pad":"' + b"x" * max(0, size - 10) + b'"}')
    else:
        body = Body(value={})
    body.ascii_only = often(draw, 80) if clean else draw(st.booleans())
    body.bom = not clean and often(draw, 3)
    body.chunked = often(draw, 10)
    return body


def header_bytes(max_size: int = 40) -> st.SearchStrategy[bytes]:
    """Header values an HTTP/1.1 client can put on the wire (visible ASCII, obs-text, inner
    spaces)."""
    octet = st.one_of(st.integers(0x21, 0x7E), st.integers(0x80, 0xFF), st.just(0x20))
    return st.lists(octet, max_size=max_size).map(bytes).map(lambda b: b.strip(b" "))


COOKIE_SAFE = string.ascii_letters + string.digits + "!#$%&'()*+-./:<>?@[]^_`{|}~"
CONTENT_TYPES = st.one_of(
    st.sampled_from(
        [
            None,
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
            "application/json;charset=latin-1",
            "application/json ; x=y",
            "text/plain",
            "text/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "application/json-patch+json",
            "",
            ";",
            "application/",
            "*/*",
        ]
    ),
    header_bytes(),
)
# Methods the HTTP parser knows; for others see test_extension_methods_answer_405_envelope.
OTHER_METHODS = ["GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND", "TRACE", "PURGE"]


@dataclass
class Request:
    method: str
    path: str
    body: Body
    csrf_header: bytes | None
    csrf_cookie: bytes | None
    token: Any  # None, REAL_TOKEN or bytes
    session_cookie: Any  # None, "real" or bytes
    content_type: Any  # None, str or bytes
    extra_headers: dict[str, bytes] = field(default_factory=dict)


@st.composite
def csrf_pairs(draw: st.DrawFn) -> tuple[bytes | None, bytes | None]:
    kind = (
        "equal"
        if often(draw, 85)
        else draw(
            st.sampled_from(["missing-header", "missing-cookie", "missing", "unequal", "empty"])
        )
    )
    value = draw(st.text(COOKIE_SAFE, min_size=1, max_size=24)).encode()
    if kind == "equal":
        return value, value
    if kind == "missing-header":
        return None, value
    if kind == "missing-cookie":
        return value, None
    if kind == "missing":
        return None, None
    if kind == "empty":
        return b"", draw(st.sampled_from([b"", value]))
    return value, draw(header_bytes(24).filter(lambda v: v != value and b";" not in v))


@st.composite
def requests(draw: st.DrawFn, endpoint: Endpoint | None, path: str, clean: bool = False) -> Request:
    """Any request to `path`; with `clean`, the transport is right and only the body's values
    vary."""
    csrf_header, csrf_cookie = (b"lol", b"lol") if clean else draw(csrf_pairs())
    # The real token mostly where it is needed; rarely for logout, after which a new listener is
    # needed.
    real = (
        25
        if endpoint is None or not endpoint.auth
        else 20
        if endpoint.path == "auth/logout"
        else 75
    )
    if often(draw, real):
        token: Any = REAL_TOKEN
    else:
        token = draw(
            st.one_of(
                st.none(),
                st.just(b""),
                header_bytes(),
                st.text("0123456789abcdef", max_size=64).map(str.encode),
            )
        )
    session_cookie = (
        None if clean or often(draw, 80) else draw(st.sampled_from(["real", b"garbage", b""]))
    )
    extra: dict[str, bytes] = {}
    for name in ("X-Request-Id", "X-Forwarded-For", "X-Forwarded-Proto", "User-Agent", "Accept"):
        if often(draw, 5):
            extra[name] = draw(header_bytes())
    return Request(
        method="POST" if clean or often(draw, 85) else draw(st.sampled_from(OTHER_METHODS)),
        path=path,
        body=draw(bodies(endpoint, clean)),
        csrf_header=csrf_header,
        csrf_cookie=csrf_cookie,
        token=token,
        session_cookie=session_cookie,
        content_type="application/json" if clean or often(draw, 85) else draw(CONTENT_TYPES),
        extra_headers=extra,
    )


@st.composite
def endpoint_requests(draw: st.DrawFn) -> Request:
    """A registered endpoint, usually under one of its versions, sometimes under another."""
    endpoint = draw(st.sampled_from(ENDPOINTS))
    if often(draw, 10):
        version = draw(
            st.one_of(st.sampled_from([0, 2, 3, 4, 5, 99, 9999, 10000, 10**20]), st.integers(0, 20))
        )
    else:
        version = draw(st.sampled_from(endpoint.versions))
    return draw(requests(endpoint, f"/api/v{version}/{endpoint.path}"))


@st.composite
def body_requests(draw: st.DrawFn) -> Request:
    """A well-formed call of a registered endpoint whose body values are fuzzed: reaches the
    handlers."""
    endpoint = draw(st.sampled_from(ENDPOINTS))
    return draw(requests(endpoint, f"/api/v{endpoint.versions[0]}/{endpoint.path}", clean=True))


SEGMENT = st.one_of(
    st.text(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@", max_size=12),
    st.sampled_from(
        [
            "%00",
            "%ff",
            "%c3%28",
            "%2F",
            "%2f",
            "%25",
            "%20",
            "%2e%2e",
            "..",
            ".",
            "",
            "v1",
            "v0",
            "v01",
            "v4",
            "v9999",
            "v10000",
            "v-1",
            "vv1",
            "V1",
            "v1.0",
            "v١",
            "auth",
            "Auth",
            "login",
            "LOGIN",
            "station",
            "getStations",
            "meta",
            "getEndpoints",
            "listener",
            "register",
        ]
    ),
    # anything at all, percent-encoded (lone surrogates become invalid UTF-8 escapes)
    st.text(ANY_CHAR, max_size=8).map(lambda s: quote(s.encode("utf-8", "surrogatepass"), safe="")),
)


NEAR_VERSIONS = [
    "v01",
    "v001",
    "v0",
    "V1",
    "v1.0",
    "v+1",
    "v%201",
    "v1%20",
    "v%D9%A1",
    "v%EF%BC%91",
    "v%F0%9D%9F%99",
    "v%C2%B9",
    "v%E2%82%81",
    "v1%0A",
    "v10000",
    "v",
]
ROUTE_SUFFIXES = [
    "/",
    "//",
    "%0A",
    "%0D%0A",
    "%0D",
    "%00",
    "%20",
    "%09",
    ".",
    ".json",
    "/x",
    "%2F",
    "%E2%80%8B",
]


@st.composite
def any_paths(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["api", "api", "near-route", "near-route", "site", "fixed"]))
    if kind == "near-route":  # a registered route, slightly off
        endpoint = draw(st.sampled_from(ENDPOINTS))
        area, operation = endpoint.path.split("/")
        version = draw(
            st.one_of(st.just(f"v{endpoint.versions[0]}"), st.sampled_from(NEAR_VERSIONS))
        )
        if often(draw, 30):
            area = draw(
                st.sampled_from(
                    [area.upper(), area.capitalize(), area + "s", area[:-1], quote(area + "é")]
                )
            )
        if often(draw, 30):
            operation = draw(
                st.sampled_from([operation.lower(), operation + "%00", "%20" + operation])
            )
        path = f"/api/{version}/{area}/{operation}" + (
            draw(st.sampled_from(ROUTE_SUFFIXES)) if often(draw, 50) else ""
        )
    elif kind == "fixed":
        path = draw(
            st.sampled_from(
                [
                    "/",
                    "/api",
                    "/api/",
                    "/api//",
                    "/healthz",
                    "/openapi.json",
                    "/favicon.ico",
                    "/art/1",
                    "/audio/x",
                    "/API/v1/auth/login",
                    "/api/v1/auth/login/",
                    "/api/v1//auth/login",
                    "/api/v1/auth%2Flogin",
                    "/api/v1/Auth/Login",
                    "/api/v01/auth/login",
                    "/api/v1/auth/login;x",
                    "/api/v1/meta/getEndpoints",
                ]
            )
        )
    else:
        segments = draw(st.lists(SEGMENT, max_size=6))
        path = ("/api/" if kind == "api" else "/") + "/".join(segments)
    if draw(st.integers(0, 5)) == 0:
        path += "?" + draw(st.sampled_from(["", "a=b", "x=%00", "username=a&password=b", "&&=="]))
    return path


@st.composite
def path_requests(draw: st.DrawFn) -> Request:
    path = draw(any_paths())
    return draw(requests(None, path))


# --------------------------------------------------------------------------------------
# Sending and checking


class Fuzzer:
    """One HTTP client and one live listener (re-registered whenever the fuzz logs it out)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.http = httpx.Client(base_url=server.url, timeout=60)
        self.token = ""
        self.cookie = ""
        self._register()
        known = self.server.client()
        known.register(KNOWN_USER, KNOWN_PASSWORD)
        known.http.close()

    def _register(self) -> None:
        api = self.server.client()
        self.token = api.register(unique("fuzz"))["authToken"]
        self.cookie = api.http.cookies[SESSION_COOKIE]
        api.http.close()

    def send(self, req: Request) -> httpx.Response:
        self.http.cookies.clear()  # only the cookies chosen below
        token = self.token
        headers: dict[str, Any] = {}
        if req.content_type is not None:
            headers["Content-Type"] = req.content_type
        if req.csrf_header is not None:
            headers["X-CsrfToken"] = req.csrf_header
        if req.token is REAL_TOKEN:
            headers["X-AuthToken"] = token
        elif req.token is not None:
            headers["X-AuthToken"] = req.token
        cookies = []
        if req.csrf_cookie is not None:
            cookies.append(b"csrftoken=" + req.csrf_cookie)
        if req.session_cookie == "real":
            cookies.append(f"{SESSION_COOKIE}={self.cookie}".encode())
        elif req.session_cookie is not None:
            cookies.append(SESSION_COOKIE.encode() + b"=" + req.session_cookie)
        if cookies:
            headers["Cookie"] = b"; ".join(cookies)
        headers.update(req.extra_headers)
        data = req.body.render(token)
        content: bytes | Iterator[bytes] = data
        if req.body.chunked:
            content = iter([data[i : i + 65536] for i in range(0, len(data), 65536)] or [b""])
        # An absolute URL: a relative one may not start with "//".
        response = self.http.request(
            req.method, self.server.url + req.path, headers=headers, content=content
        )
        self._follow(req, response, token)
        return response

    def _follow(self, req: Request, response: httpx.Response, token: str) -> None:
        """Keep the live listener usable: a logout ends it, a resumed session changes its cookie."""
        if response.status_code != 200 or req.method != "POST":
            return
        if (
            req.path.startswith("/api/")
            and req.path.endswith("/auth/logout")
            and req.token is REAL_TOKEN
        ):
            self._register()
        elif response.headers.get("content-type", "").startswith("application/json"):
            body = response.json()
            if (
                isinstance(body, dict)
                and body.get("authToken") == token
                and SESSION_COOKIE in response.cookies
            ):
                self.cookie = response.cookies[SESSION_COOKIE]


ROUTE = re.compile(r"/api/v([0-9]{1,4})/([A-Za-z]+/[A-Za-z][A-Za-z0-9]*)", re.ASCII)


def _reject_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name}")


def check_response(req: Request, response: httpx.Response) -> None:
    """The property: no 500, JSON everywhere under /api, and every failure is the §4 envelope."""
    status = response.status_code
    where = f"{req.method} {req.path} -> {status} {response.content[:500]!r}\nrequest: {req!r}"
    assert status != 500, where
    assert 100 <= status < 600, where
    if req.method == "HEAD":
        return  # no body to check
    is_api = req.path.startswith("/api")
    if status == 200 and not is_api and req.path.split("?")[0] not in ("/healthz", "/openapi.json"):
        return  # e.g. the HTML site root
    assert response.headers.get("content-type", "").startswith("application/json"), where
    body = json.loads(response.content, parse_constant=_reject_constant)
    assert isinstance(body, dict), where
    if status == 200:
        event(f"200 {req.path.split('?')[0] if is_api else 'site'}")
        return
    event(
        f"{status} {body.get('errorString')}" + (f" {req.path}" if req.path.count("/") == 4 else "")
    )
    assert set(body) == {"errorCode", "errorString", "message"}, where
    assert body["errorString"] in ErrorCode.__members__, where
    error = ErrorCode[body["errorString"]]
    assert body["errorCode"] == error.code and type(body["errorCode"]) is int, where
    assert isinstance(body["message"], str) and body["message"], where
    if error is ErrorCode.INVALID_REQUEST:
        assert status in (400, 413), where
    else:
        assert status == error.http_status, where
    if error is ErrorCode.RATE_LIMITED:
        assert response.headers.get("retry-after", "").isdigit(), where


def check_routing(req: Request, response: httpx.Response) -> None:
    """An /api answer other than 404/405 means the path was routed: it must name a registered
    route (§5)."""
    if (
        not req.path.startswith("/api")
        or req.method != "POST"
        or response.status_code in (404, 405)
    ):
        return
    sent = unquote(response.request.url.raw_path.split(b"?")[0].decode("ascii"), errors="replace")
    match = ROUTE.fullmatch(sent)
    assert match and registry.resolve(int(match.group(1)), match.group(2)), (
        f"{sent!r} was routed ({response.status_code} {response.content[:200]!r}) but is no "
        "registered route"
    )


@pytest.fixture(scope="module")
def fuzzer(server: Server) -> Iterator[Fuzzer]:
    fuzzer = Fuzzer(server)
    yield fuzzer
    fuzzer.http.close()


def test_fuzzer_reaches_the_handlers(fuzzer: Fuzzer) -> None:
    """Sanity check of the harness itself: a well-formed request through it succeeds."""
    req = Request(
        "POST",
        "/api/v1/station/getStations",
        Body(value={"pageSize": 5}),
        b"lol",
        b"lol",
        REAL_TOKEN,
        "real",
        "application/json",
    )
    response = fuzzer.send(req)
    assert response.status_code == 200, response.text
    assert response.json()["index"] == 0


@FUZZ_SETTINGS
@given(req=endpoint_requests())
def test_registered_endpoints_never_crash(fuzzer: Fuzzer, req: Request) -> None:
    response = fuzzer.send(req)
    check_response(req, response)
    check_routing(req, response)


@FUZZ_SETTINGS
@given(req=body_requests())
def test_request_bodies_never_crash_the_handlers(fuzzer: Fuzzer, req: Request) -> None:
    response = fuzzer.send(req)
    check_response(req, response)
    check_routing(req, response)


@FUZZ_SETTINGS
@given(req=path_requests())
def test_any_path_and_method_answers_an_envelope(fuzzer: Fuzzer, req: Request) -> None:
    response = fuzzer.send(req)
    check_response(req, response)
    check_routing(req, response)


def test_server_logged_no_unhandled_error(fuzzer: Fuzzer) -> None:
    """Runs last: the fuzzing above left no 'unhandled error' in the server log."""
    crashes = [
        line
        for line in fuzzer.server.errors
        if any(s in line for s in ("unhandled error", "Traceback", "Exception in ASGI"))
    ]
    assert not crashes, "".join(crashes[:5])[:5000]


# --------------------------------------------------------------------------------------
# Findings of the fuzzing above, pinned as plain tests


@pytest.mark.parametrize(
    "name",
    ["ß" * 40, "ẞ" * 33, "İ" * 40, "ǰ" * 64],
    ids=["sharp-s", "capital-sharp-s", "dotted-I", "j-caron"],
)
def test_usernames_longer_once_case_folded_do_not_crash_registration(
    server: Server, name: str
) -> None:
    """'ß' * 40 is 40 characters, within the 64 allowed, but its comparison key is 'ss' * 40."""
    api = server.client()
    response = api.call("v1/listener/register", {"username": name, "password": KNOWN_PASSWORD})
    if response.status_code == 400:
        assert_error(response, 400, "INVALID_USERNAME")
    else:
        assert response.status_code == 200, response.text
        assert api.login(name.upper(), KNOWN_PASSWORD)["username"] == name


@pytest.mark.parametrize(
    "method",
    [
        "TRACE",
        "PROPFIND",
        "MKCOL",
        "COPY",
        "MOVE",
        "LOCK",
        "UNLOCK",
        "REPORT",
        "PURGE",
        "SEARCH",
        "LINK",
        "UNLINK",
        "SUBSCRIBE",
        "NOTIFY",
        "QUERY",
    ],
)
def test_registered_http_methods_answer_405_envelope(server: Server, method: str) -> None:
    """Spec §1: any method other than POST on /api/... is 405 METHOD_NOT_ALLOWED, in the envelope.

    Method names no HTTP registry knows (e.g. BREW) are refused by the HTTP parser itself with
    400 before the app sees them; see the transport notes in docs/api.md.
    """
    response = httpx.request(method, server.url + "/api/v1/auth/login")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize(
    "path",
    [
        "v%D9%A1/meta/getEndpoints",
        "v%EF%BC%91/meta/getEndpoints",
        "v%F0%9D%9F%99/meta/getEndpoints",
        "v1/meta/getEndpoints%0A",
    ],
)
def test_only_ascii_versions_and_exact_paths_are_routed(server: Server, path: str) -> None:
    """'v١' (Arabic-Indic one), 'v１' (fullwidth one) are no version; a trailing newline is no
    endpoint."""
    assert_error(server.client().call(path), 404, "NOT_FOUND")
