"""v3 sod/search: the catalogue search later clients use, answered with annotations."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from airwave.api.annotations import Annotation, annotation
from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel
from airwave.core import ids, search


class SodSearchRequest(RequestModel):
    query: str = Field(max_length=256)
    types: list[Annotated[str, Field(max_length=16)]] = Field(
        default_factory=lambda: ["AR", "AL", "TR", "SF"],
        max_length=32,
        description="any of AR, AL, TR, SF (genre stations; GE too), in any case; codes of kinds "
        "Airwave has not (CO, PL, ...) are ignored",
    )
    start: int = Field(0, ge=0, le=1000)
    count: int = Field(20, ge=1, le=100)
    annotate: bool = Field(True, description="answer `annotations` for every result")


class SodSearchResults(ResponseModel):
    results: list[str] = Field(description="pandoraIds, best match first")
    annotations: dict[str, Annotation] = Field(
        description="by pandoraId, every result's annotation (empty with `annotate: false`)"
    )


@registry.endpoint(
    "sod/search",
    versions=(3,),
    request=SodSearchRequest,
    response=SodSearchResults,
    notes="""
    The ranking of `search/fullSearch` (case- and accent-insensitive, exact > prefix > word >
    similar spelling). Clients also send `listener`, `filters` and `searchTime`: ignored.
    """,
)
def sod_search(call: Call, req: SodSearchRequest) -> SodSearchResults:
    """Tracks, albums, artists and genres matching a query, with their annotations."""
    listener = call.require_listener()
    hits = search.catalogue_search(
        call.reader(), req.query, req.types, req.start, req.count, req.annotate
    )
    on_demand = call.settings.tier(listener.tier).on_demand
    found = [ids.pandora_id(r.kind, r.id) for r in hits.found]
    return SodSearchResults(
        results=found,
        annotations={
            ids.pandora_id(ref.kind, ref.id): annotation(call, note, on_demand)
            for ref, note in hits.notes.items()
        },
    )
