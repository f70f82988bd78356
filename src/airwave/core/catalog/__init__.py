"""The catalogue: lookups and pages, search, the library and its scans."""
