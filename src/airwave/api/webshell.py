"""The web player's service worker as served at /sw.js: its template with the app shell's URLs and
a version made from their ETags, so every release gets a cache of its own."""

from __future__ import annotations

import hashlib

import orjson

TEMPLATE = "sw.js"
_BUILD_LINE = b'const BUILD = { version: "dev", shell: ["/"] };'


def shell_urls(assets: dict[str, str]) -> list[str]:
    """What an installed player keeps: the page at / and every file of /web/ (index.html is
    the page itself)."""
    return ["/", *(f"/web/{name}" for name in sorted(assets) if name != "index.html")]


def service_worker(template: bytes, etags: dict[str, str]) -> bytes:
    """The script with its BUILD line filled in from the served files (name -> ETag)."""
    if _BUILD_LINE not in template:
        raise ValueError("sw.js lost its BUILD line; the server cannot fill it in")
    digest = hashlib.sha1()
    for name in sorted(etags):
        digest.update(f"{name}\0{etags[name]}\n".encode())
    build = {"version": digest.hexdigest()[:16], "shell": shell_urls(etags)}
    return template.replace(_BUILD_LINE, b"const BUILD = " + orjson.dumps(build) + b";", 1)
