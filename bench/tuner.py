"""What the tuner interface costs beside the REST API: station.getPlaylist (Blowfish-encrypted
body, partner and user token, the three audio qualities) against v1/playlist/getFragment on the
same server, station and listener.

`airwave serve` runs as a child process on the demo library (SQLite, AIRWAVE_FRAGMENT_LIMIT
lifted, relaxed radio rules as the demo uses, access log on as in production). One plus-tier
listener signs in (one session, used by both interfaces, so the one-active-player rule is not in
the way) and creates one station; then rounds alternate between the two calls (REST first in odd
rounds, the tuner first in even ones), each round a run of one-at-a-time requests on a keep-alive
connection. Prints the median latency of each, per round and over all rounds, and the ratio
tuner/REST (the issue's bound: 1.5); never asserts.

    .venv/bin/python bench/tuner.py [--rounds 6] [--requests 150]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from Crypto.Cipher import Blowfish

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.databases import Backend  # the shared server harness lives in tests/
from support.server import Server, wait_indexed

BOUND = 1.5
PARTNER = {
    "username": "android",
    "password": "AC7IBG09A3DTSYM4R41UJWL07VLN8JI7",
    "deviceModel": "android-generic",
    "version": "5",
}
ENCRYPT = "6#26FRL$ZWD"


def encrypt(body: dict) -> bytes:
    plain = json.dumps(body).encode()
    plain += b"\0" * (-len(plain) % 8)
    return Blowfish.new(ENCRYPT.encode(), Blowfish.MODE_ECB).encrypt(plain).hex().encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=150)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="airwave-bench-tuner-"))
    library = work / "music"
    subprocess.run(
        [sys.executable, "-m", "airwave", "demo", "--out", str(library)], check=True,
        capture_output=True,
    )  # fmt: skip
    server = Server(
        Backend("sqlite", work / "data", None),
        ["--library", str(library)],
        env={"AIRWAVE_FRAGMENT_LIMIT": "1000000", "AIRWAVE_RADIO_RULES": "relaxed"},
        log_file=work / "server.log",
        clean_env=True,
    ).start()
    try:
        wait_indexed(server)
        name, password = "bench", "correct horse battery"
        server.cli("user", "add", name, "--tier", "plus", "--password-stdin", input=password)
        rest = httpx.Client(base_url=server.url, cookies={"csrftoken": "b"}, timeout=60)
        head = {"X-CsrfToken": "b"}
        login = rest.post("/api/v1/auth/login", json={"username": name, "password": password},
                          headers=head).json()  # fmt: skip
        head["X-AuthToken"] = login["authToken"]
        artist = rest.post("/api/v3/sod/search", json={"query": "a", "types": ["AR"]},
                           headers=head).json()["results"][0]  # fmt: skip
        station = rest.post("/api/v1/station/createStation", json={"pandoraId": artist},
                            headers=head).json()["stationId"]  # fmt: skip

        tuner = httpx.Client(base_url=server.url, timeout=60)
        url = "/services/json/"
        partner = tuner.post(url, params={"method": "auth.partnerLogin"},
                             content=json.dumps(PARTNER).encode()).json()["result"]  # fmt: skip
        # one session for both (a tuner userAuthToken is a REST authToken): one active player
        user = {"userAuthToken": login["authToken"], "userId": login["listenerId"]}
        query = {"method": "station.getPlaylist", "auth_token": user["userAuthToken"],
                 "partner_id": partner["partnerId"], "user_id": user["userId"]}  # fmt: skip

        def rest_call() -> None:
            answer = rest.post("/api/v1/playlist/getFragment", json={"stationId": station},
                               headers=head)  # fmt: skip
            assert answer.status_code == 200, answer.text

        def tuner_call() -> None:
            body = {"stationToken": station, "userAuthToken": user["userAuthToken"],
                    "syncTime": int(time.time()), "includeTrackLength": True}  # fmt: skip
            answer = tuner.post(url, params=query, content=encrypt(body)).json()
            assert answer["stat"] == "ok", answer

        def timed(call, n: int) -> list[float]:  # noqa: ANN001
            out = []
            for _ in range(n):
                started = time.perf_counter()
                call()
                out.append((time.perf_counter() - started) * 1000)
            return out

        for call in (rest_call, tuner_call):  # warm both paths
            timed(call, 20)
        samples: dict[str, list[float]] = {"rest": [], "tuner": []}
        print(f"{'round':>5}  {'REST getFragment p50 ms':>24}  {'tuner getPlaylist p50 ms':>25}")
        for n in range(args.rounds):
            order = [("rest", rest_call), ("tuner", tuner_call)]
            order = order if n % 2 == 0 else order[::-1]
            got = {kind: timed(call, args.requests) for kind, call in order}
            for kind in got:
                samples[kind] += got[kind]
            print(
                f"{n + 1:>5}  {statistics.median(got['rest']):>24.2f}"
                f"  {statistics.median(got['tuner']):>25.2f}"
            )
        rest_p50 = statistics.median(samples["rest"])
        tuner_p50 = statistics.median(samples["tuner"])
        print(f"REST getFragment (anchor), median of all rounds: {rest_p50:.2f} ms")
        print(f"tuner getPlaylist, median of all rounds:          {tuner_p50:.2f} ms")
        print(f"ratio tuner/REST: {tuner_p50 / rest_p50:.2f} (bound {BOUND})")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
