# Airwave in a container: `docker build -t airwave .` (or podman), then see compose.yaml or
# README.md "Containers". The image runs `airwave serve` as an unprivileged user, with its data
# in /var/lib/airwave and the music library mounted read-only at /music.
FROM debian:bookworm-slim

# python3 for the server; libmp3lame0 for the faster MP3 encoder (setting system_lame)
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv libmp3lame0 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 990 --home-dir /var/lib/airwave --create-home airwave

WORKDIR /opt/airwave
COPY pyproject.toml README.md ./
COPY src ./src
# a build behind a TLS-inspecting proxy passes its CA bundle as the optional secret "ca_bundle"
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi \
 && python3 -m venv /opt/airwave/venv \
 && /opt/airwave/venv/bin/pip install --no-cache-dir --quiet . \
 && rm -rf /opt/airwave/src /opt/airwave/build

ENV PATH=/opt/airwave/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    AIRWAVE_DATA_DIR=/var/lib/airwave \
    AIRWAVE_HOST=0.0.0.0 \
    AIRWAVE_PORT=4533
USER airwave
VOLUME ["/var/lib/airwave"]
EXPOSE 4533
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:4533/livez', timeout=4)"]
CMD ["airwave", "serve", "--library", "/music"]
