"""OpenAPI 3.1 document built from the endpoint registry."""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from airwave import __version__
from airwave.api.registry import Registry
from airwave.api.schemas import ErrorEnvelope

REF = "#/components/schemas/{model}"


def schemas(registry: Registry) -> tuple[dict[Any, Any], dict[str, Any]]:
    """JSON schemas of every request/response model: (refs by (model, mode), definitions)."""
    models: list[tuple[Any, Any]] = [(ErrorEnvelope, "serialization")]
    for ep in registry.endpoints():
        models += [(ep.request, "validation"), (ep.response, "serialization")]
    refs, top = models_json_schema(list(dict.fromkeys(models)), ref_template=REF, by_alias=True)
    return refs, top.get("$defs", {})


def openapi_document(registry: Registry) -> dict[str, Any]:
    refs, definitions = schemas(registry)
    paths: dict[str, Any] = {}
    for ep in registry.endpoints():
        params = [
            {
                "name": "X-CsrfToken",
                "in": "header",
                "required": True,
                "schema": {"type": "string"},
                "description": "must equal the csrftoken cookie",
            },
            {
                "name": "X-AuthToken",
                "in": "header",
                "required": ep.auth,
                "schema": {"type": "string"},
                "description": "authToken from auth/login" if ep.auth else "not needed",
            },
        ]
        by_status: dict[int, list[str]] = {}
        for error in ep.all_errors():
            by_status.setdefault(error.http_status, []).append(error.name)
        responses: dict[str, Any] = {
            "200": {
                "description": "success",
                "content": {"application/json": {"schema": refs[(ep.response, "serialization")]}},
            }
        }
        for status, names in sorted(by_status.items()):
            responses[str(status)] = {
                "description": ", ".join(names),
                "content": {"application/json": {"schema": refs[(ErrorEnvelope, "serialization")]}},
            }
        for version in ep.versions:
            description = "\n\n".join(p for p in (ep.summary, ep.notes) if p)
            paths[f"/api/v{version}/{ep.path}"] = {
                "post": {
                    "operationId": f"v{version}_{ep.path.replace('/', '_')}",
                    "summary": ep.summary.split("\n", 1)[0],
                    "description": description,
                    "tags": [ep.area],
                    "parameters": params,
                    "requestBody": {
                        "required": False,
                        "content": {
                            "application/json": {"schema": refs[(ep.request, "validation")]}
                        },
                    },
                    "responses": responses,
                }
            }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Airwave REST API", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": definitions,
            "securitySchemes": {
                "authToken": {"type": "apiKey", "in": "header", "name": "X-AuthToken"}
            },
        },
    }
