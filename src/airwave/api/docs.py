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


def _type(schema: dict[str, Any] | bool, defs: dict[str, Any]) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        parts = [_type(s, defs) for s in schema["anyOf"]]
        return " or ".join(p for p in parts if p != "null") + (" or null" if "null" in parts else "")
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}), defs)}"
    if kind == "object" and "additionalProperties" in schema:
        return f"object of {_type(schema['additionalProperties'], defs)}"
    return str(kind)


def _constraints(schema: dict[str, Any]) -> str:
    labels = {"minimum": ">=", "maximum": "<=", "minLength": "min length", "maxLength": "max length"}
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
    lines = [HEADER, "## Errors", "", "| errorCode | errorString | HTTP | meaning |", "|---|---|---|---|"]
    lines += [f"| {e.code} | `{e.name}` | {e.http_status} | {e.meaning} |" for e in ErrorCode]
    lines += ["", "## Endpoints", ""]
    for ep in registry.endpoints():
        versions = ", ".join(f"v{v}" for v in ep.versions)
        flags = ["auth" if ep.auth else "no auth"] + (["writes (refused in read-only mode)"] if ep.writes else [])
        lines += [f"### `{ep.path}`", "", f"Versions: {versions}. {', '.join(flags).capitalize()}.", ""]
        if ep.summary:
            lines += [ep.summary, ""]
        if ep.notes:
            lines += [ep.notes, ""]
        lines += ["Request:", ""] + _fields(refs[(ep.request, "validation")], defs, True)
        lines += [f"Response (`{ep.response.__name__}`):", ""] + _fields(refs[(ep.response, "serialization")], defs, False)
        lines += ["Errors: " + ", ".join(f"`{e.name}`" for e in ep.all_errors()), ""]
    nested = sorted(
        name for name in defs if all(name != r.get("$ref", "").rsplit("/", 1)[-1] for r in refs.values())
    )
    if nested:
        lines += ["## Nested objects", ""]
        for name in nested:
            lines += [f"### `{name}`", ""] + _fields(defs[name], defs, False)
    return "\n".join(lines).rstrip() + "\n"
