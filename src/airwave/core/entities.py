"""What the edges hold between core calls: the caller's listener and session, a database
session, and the artwork rows core's views carry.

Core hands these out and takes them back; the edges read their fields and never query with them,
so `airwave.api` reaches storage only through this module.
"""

from sqlalchemy.orm import Session

from airwave.store.models import Artwork, AuthSession, Listener

__all__ = ["Artwork", "AuthSession", "Listener", "Session"]
