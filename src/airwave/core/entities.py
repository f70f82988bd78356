"""What the edges hold between core calls: the caller's listener and session, and a database
session.

Core hands these out and takes them back; the edges read their fields and never query with them,
so `airwave.api` reaches storage only through this module.
"""

from sqlalchemy.orm import Session

from airwave.store.models import AuthSession, Listener

__all__ = ["AuthSession", "Listener", "Session"]
