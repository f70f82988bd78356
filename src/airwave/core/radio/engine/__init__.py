"""The station engine: the picker that chooses the next tracks and the rules every fragment
obeys."""
