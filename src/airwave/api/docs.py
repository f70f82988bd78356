"""docs/api.md: the human API reference, rendered from the endpoint registry."""

from __future__ import annotations

import json
from typing import Any

from airwave.api.openapi import schemas
from airwave.api.registry import Registry
from airwave.errors import ErrorCode

HEADER = """# Airwave API reference

Generated from the endpoint declarations by `airwave docs`; do not edit by hand.
The contract these endpoints implement is `shared/spec/API.md`; the decisions Airwave took
where it is silent are written under each endpoint.

## Transport in brief

- `POST {base}/api/v{N}/{area}/{operation}` with a JSON object body
  (`Content-Type: application/json`; an empty body counts as `{}`; at most 1 MiB, else 413).
- Every call sends the `csrftoken` cookie and an `X-CsrfToken` header of equal value
  (`HEAD /` sets the cookie); mismatches answer `INVALID_CSRF_TOKEN` before anything else
  but the method (405) and the path (404) is checked.
- Calls marked *auth* send `X-AuthToken` from `auth/login`. Login sets the `airwave_session`
  cookie (HttpOnly); a request carrying it must carry the token of the same session.
- Errors: `{"errorCode", "errorString", "message"}` with the HTTP status of the table below.
- Every response carries `X-Request-Id` (the client's own, if it sent a valid one).
- Order of checks: method, path, CSRF, endpoint enabled, read-only mode, body size and
  content type, auth token, request fields, then the operation itself.
- Any registered HTTP method other than POST answers 405 `METHOD_NOT_ALLOWED` with `Allow: POST`.
  Method names that no HTTP registry knows (`BREW`) are refused by the HTTP parser with a
  plain 400 before reaching the API: the fast parser is worth more than an envelope for them.
- Numeric ids are 32-bit: a musicId beyond 2147483647 names nothing (`NOT_FOUND`).
"""


ROUTES = """## Audio and art (outside `/api`)

These routes take no CSRF token and no `X-AuthToken`; their refusals are the error envelope.

### `GET|HEAD /audio/{token}`: the track object's `audioURL`

- The token is the credential: HMAC-signed listener, track, encoding and expiry
  (`audio_url_lifetime`,
  default 12 h). Altered, forged or foreign-server token: 403 `USER_NOT_AUTHORIZED`; expired: 410
  `CONTENT_HAS_EXPIRED`; the listener deleted: 403 `USER_NOT_AUTHORIZED`, suspended: 403
  `LISTENER_SUSPENDED`; the track left the library or its file is gone: 404 `NOT_FOUND`; a file that
  cannot be decoded: 500 `SERVER_ERROR` (logged); other methods: 405 `METHOD_NOT_ALLOWED`.
- `audioEncoding` says what the URL delivers: `original` (the stored file; `Content-Type` by its
  format),
  `mp3` (128 kbit/s CBR, `audio/mpeg`), `mp3-hifi` (320 kbit/s; only when the tier has high quality
  and the listener's `highQualityStreaming` is on, else `mp3`), `aacplus` (AAC-LC 64 kbit/s in ADTS,
  `audio/aac`: FFmpeg has no HE-AAC encoder, and ADTS plays while it downloads), `opus` (96 kbit/s
  in Ogg, `audio/ogg`). A request without `audioFormat` gets `aacplus`.
- Complete files: `Accept-Ranges: bytes`; one range per request (`bytes=a-b`, `a-`, `-n`) answers
  206
  with `Content-Range`; a range outside the file answers 416 `INVALID_REQUEST` with `Content-Range:
  bytes */{size}`; several ranges, or a malformed `Range`, get the whole file (200). Strong `ETag`
  and `Last-Modified`; `If-None-Match` (or `If-Modified-Since`) answers 304; `If-Range` that does
  not match strongly turns a range request into 200. `Cache-Control: private, max-age=` the seconds
  until the URL expires.
- A transcode made for the first time is streamed to a plain `GET` while it is written: 200 with
  chunked
  transfer coding and no `Content-Length`. `HEAD`, HTTP/1.0 and ranges other than `bytes=0-` wait
  until it is complete and are then answered as above. For MP3 the first listener's copy carries the
  LAME header frame before its final values are known (filled in when the encoder finishes), so that
  copy lacks the gapless trimming (about 50 ms); every later request gets the finished file.
- A transcode is shared by all concurrent requests for it and kept in a size-bounded cache
  (`transcode_cache_mb`, least recently used first out); it is stopped when its last listener has
  been gone for 2 seconds.

### `POST /audio/receipt/{token}` and `POST /audio/skip/{token}`: `audioReceiptURL`, `audioSkipUrl`

- Record that the spin was played to the end (receipt) or skipped. The body may be empty or a JSON
  object `{"secondsPlayed": n}`; `?secondsPlayed=n` or `?elapsed=n` in the query work too. Without
  it, a completed spin counts the track's length and a skipped one the time since `trackStarted` (or
  since it was issued), at most the track's length.
- The first report for a spin wins; later ones change nothing. Answer:
  `{"outcome": "completed"|"skipped", "secondsPlayed": n, "recorded": bool}` (`recorded` is false
  when an earlier report had settled the spin).
- Errors: altered token or a spin of another listener 403 `USER_NOT_AUTHORIZED`; expired 410
  `CONTENT_HAS_EXPIRED`; unknown spin 404 `NOT_FOUND`; a body that is not a JSON object or a
  `secondsPlayed` that is not a number of seconds 400 `INVALID_REQUEST`; a body over 4 KiB 413;
  read-only mode 503 `READONLY_MODE`; other methods 405.
- `airwave export plays --since DATE [--until DATE] --format csv|json` writes these play logs.

### `GET|HEAD /art/{hash}/{size}.jpg` and `/art/mosaic/{hash-...}/{size}.jpg`

Sizes 90, 130, 500, 640, 1080. Served by the same code as audio files (ranges, validators), with
`Cache-Control: public, max-age=31536000, immutable`; unknown pictures 404 `NOT_FOUND`.
"""


def _type(schema: dict[str, Any] | bool, defs: dict[str, Any]) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        parts = [_type(s, defs) for s in schema["anyOf"]]
        return " or ".join(p for p in parts if p != "null") + (
            " or null" if "null" in parts else ""
        )
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}), defs)}"
    if kind == "object" and "additionalProperties" in schema:
        return f"object of {_type(schema['additionalProperties'], defs)}"
    return str(kind)


def _constraints(schema: dict[str, Any]) -> str:
    labels = {
        "minimum": ">=",
        "maximum": "<=",
        "minLength": "min length",
        "maxLength": "max length",
    }
    out = [f"{label} {schema[key]}" for key, label in labels.items() if key in schema]
    for option in schema.get("anyOf", []):
        out += [f"{label} {option[key]}" for key, label in labels.items() if key in option]
    if "default" in schema and schema["default"] is not None:
        out.append(f"default {json.dumps(schema['default'])}")
    if schema.get("description"):
        out.append(schema["description"])
    return "; ".join(out)


def _fields(schema: dict[str, Any], defs: dict[str, Any], request: bool) -> list[str]:
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if schema.get("type") == "array":
        return [f"A JSON list of {_type(schema['items'], defs)}.", ""]
    props = schema.get("properties", {})
    if not props:
        return ["_none_", ""]
    required = set(schema.get("required", []))
    head = "| field | type | required | notes |" if request else "| field | type | notes |"
    rows = [head, "|---|---|---|---|" if request else "|---|---|---|"]
    for name, prop in props.items():
        cells = [f"`{name}`", _type(prop, defs)]
        if request:
            cells.append("yes" if name in required else "no")
        cells.append(_constraints(prop))
        rows.append("| " + " | ".join(cells) + " |")
    rows.append("")
    return rows


def render_markdown(registry: Registry) -> str:
    refs, defs = schemas(registry)
    lines = [
        HEADER,
        ROUTES,
        "## Errors",
        "",
        "| errorCode | errorString | HTTP | meaning |",
        "|---|---|---|---|",
    ]
    lines += [f"| {e.code} | `{e.name}` | {e.http_status} | {e.meaning} |" for e in ErrorCode]
    lines += ["", "## Endpoints", ""]
    for ep in registry.endpoints():
        versions = ", ".join(f"v{v}" for v in ep.versions)
        flags = ["auth" if ep.auth else "no auth"] + (
            ["writes (refused in read-only mode)"] if ep.writes else []
        )
        lines += [
            f"### `{ep.path}`",
            "",
            f"Versions: {versions}. {', '.join(flags).capitalize()}.",
            "",
        ]
        if ep.summary:
            lines += [ep.summary, ""]
        if ep.notes:
            lines += [ep.notes, ""]
        lines += ["Request:", ""] + _fields(refs[(ep.request, "validation")], defs, True)
        lines += [f"Response (`{ep.response.__name__}`):", ""] + _fields(
            refs[(ep.response, "serialization")], defs, False
        )
        lines += ["Errors: " + ", ".join(f"`{e.name}`" for e in ep.all_errors()), ""]
    nested = sorted(
        name
        for name in defs
        if all(name != r.get("$ref", "").rsplit("/", 1)[-1] for r in refs.values())
    )
    if nested:
        lines += ["## Nested objects", ""]
        for name in nested:
            lines += [f"### `{name}`", ""] + _fields(defs[name], defs, False)
    return "\n".join(lines).rstrip() + "\n"
