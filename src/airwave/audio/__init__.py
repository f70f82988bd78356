"""Audio delivery: signed URLs, byte-range file serving, transcoding and its on-disk cache."""
