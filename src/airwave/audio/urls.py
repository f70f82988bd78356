"""The URLs of spec §8 that carry signed tokens: audio, receipt (completed) and skip."""

from __future__ import annotations


def audio_url(base_url: str, token: str) -> str:
    """audioURL: GET/HEAD delivers the track in the token's encoding."""
    return f"{base_url.rstrip('/')}/audio/{token}"


def receipt_url(base_url: str, token: str) -> str:
    """audioReceiptURL: POST records that the listener played the spin to the end."""
    return f"{base_url.rstrip('/')}/audio/receipt/{token}"


def skip_url(base_url: str, token: str) -> str:
    """audioSkipUrl: POST records that the listener skipped the spin."""
    return f"{base_url.rstrip('/')}/audio/skip/{token}"
