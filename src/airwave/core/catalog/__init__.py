"""The catalogue: lookups and pages, search, art and the similarity space."""
