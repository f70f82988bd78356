"""The JSON "tuner" interface (v5, `/services/json/`) that pianobar, pydora and Pithos speak: a
second edge over the same core use cases as the REST API."""
