"""Fast in-process tests of the core rules (no server, a fixed clock)."""
