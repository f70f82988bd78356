"""Radio: stations, fragments, listening (claims, skips, caps), audio delivery, the station
engine."""
