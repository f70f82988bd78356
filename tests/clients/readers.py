"""Read an answer the way a client's language does, failing where that client would fail.

Each reader raises `ClientBroke` (an AssertionError) with what the client would have done:
thrown, crashed, or decoded a wrong value. Field lookups are exact unless the language's decoder
is not (Go's encoding/json matches names case-insensitively).
"""

from __future__ import annotations

from typing import Any


class ClientBroke(AssertionError):
    pass


# --- Python: d['k'] -------------------------------------------------------------------------


def py(value: Any, *path: str | int) -> Any:
    """`value['a']['b'][0]` as Python reads it: KeyError, IndexError or TypeError break it."""
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError) as exc:
            raise ClientBroke(
                f"Python: [{step!r}] raised {type(exc).__name__} on {value!r}"
            ) from None
    return value


# --- Go: encoding/json into typed structs ----------------------------------------------------
# A schema is a Go type written in Python: str, int, float, bool, Any (interface{}), [T] for a
# slice, {"Field": T} for a struct (names as the json tag spells them), ("map", T) for a map.


def go(value: Any, schema: Any, where: str = "$") -> Any:
    """json.Unmarshal of `value` into `schema`: type mismatches are errors; absent fields and
    `null` leave zero values; unknown fields are ignored; names match case-insensitively."""
    if value is None:
        return _go_zero(schema)
    if schema is Any:
        return value
    if schema is str:
        if not isinstance(value, str):
            raise ClientBroke(f"Go: cannot unmarshal {_js(value)} into string at {where}")
        return value
    if schema is bool:
        if not isinstance(value, bool):
            raise ClientBroke(f"Go: cannot unmarshal {_js(value)} into bool at {where}")
        return value
    if schema is int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ClientBroke(f"Go: cannot unmarshal {_js(value)} into int at {where}")
        if isinstance(value, float) and not value.is_integer():
            raise ClientBroke(f"Go: cannot unmarshal number {value} into int at {where}")
        return int(value)
    if schema is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ClientBroke(f"Go: cannot unmarshal {_js(value)} into float64 at {where}")
        return float(value)
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise ClientBroke(f"Go: cannot unmarshal {_js(value)} into slice at {where}")
        return [go(item, schema[0], f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(schema, tuple) and schema[0] == "map":
        if not isinstance(value, dict):
            raise ClientBroke(f"Go: cannot unmarshal {_js(value)} into map at {where}")
        return {k: go(v, schema[1], f"{where}.{k}") for k, v in value.items()}
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise ClientBroke(f"Go: cannot unmarshal {_js(value)} into struct at {where}")
        lowered = {k.lower(): k for k in value}
        out = {}
        for name, field_type in schema.items():
            key = name if name in value else lowered.get(name.lower())
            out[name] = (
                go(value[key], field_type, f"{where}.{name}")
                if key is not None
                else _go_zero(field_type)
            )
        return out
    raise TypeError(f"not a Go schema: {schema!r}")


def _go_zero(schema: Any) -> Any:
    if schema is str:
        return ""
    if schema in (int, float):
        return 0
    if schema is bool:
        return False
    if isinstance(schema, dict):
        return {name: _go_zero(t) for name, t in schema.items()}
    return None


def _js(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


# --- Java: Gson into typed classes ------------------------------------------------------------
# Same schemas as Go. Gson leaves absent fields null/zero, reads numbers into String fields and
# numeric strings into number fields (its lenient coercions), and throws JsonSyntaxException on
# other mismatches (an object where a List or String is declared, a non-numeric string in an int).


def gson(value: Any, schema: Any, where: str = "$") -> Any:
    if value is None:
        return _go_zero(schema) if schema in (int, float, bool) else None
    if schema is Any:
        return value
    if schema is str:
        if isinstance(value, list | dict):
            raise ClientBroke(f"Gson: expected a string but was {_js(value)} at {where}")
        return value if isinstance(value, str) else _java_string(value)
    if schema is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            return value.lower() == "true"  # Gson reads a string leniently as Boolean
        raise ClientBroke(f"Gson: expected a boolean but was {_js(value)} at {where}")
    if schema in (int, float):
        if isinstance(value, bool) or isinstance(value, list | dict):
            raise ClientBroke(f"Gson: expected a number but was {_js(value)} at {where}")
        try:
            number = float(value)
        except ValueError:
            raise ClientBroke(f"Gson: expected a number but was {value!r} at {where}") from None
        if schema is int and not number.is_integer():
            raise ClientBroke(f"Gson: expected an int but was {value!r} at {where}")
        return int(number) if schema is int else number
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise ClientBroke(f"Gson: expected BEGIN_ARRAY but was {_js(value)} at {where}")
        return [gson(item, schema[0], f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(schema, tuple) and schema[0] == "map":
        if not isinstance(value, dict):
            raise ClientBroke(f"Gson: expected BEGIN_OBJECT but was {_js(value)} at {where}")
        return {k: gson(v, schema[1], f"{where}.{k}") for k, v in value.items()}
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise ClientBroke(f"Gson: expected BEGIN_OBJECT but was {_js(value)} at {where}")
        return {
            name: gson(value.get(name), t, f"{where}.{name}")
            if name in value
            else (_go_zero(t) if t in (int, float, bool) else None)
            for name, t in schema.items()
        }
    raise TypeError(f"not a Gson schema: {schema!r}")


def _java_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.1f}"
    return str(value)


# --- Android: org.json getters ---------------------------------------------------------------


class OrgJson:
    """android's org.json JSONObject: get* throw JSONException on a missing key or a value of
    the wrong kind (getString turns any non-null value into text; getInt takes numbers and
    numeric strings; getBoolean takes booleans and "true"/"false"); opt* never throw."""

    def __init__(self, value: Any, where: str = "$") -> None:
        if not isinstance(value, dict):
            raise ClientBroke(f"org.json: {where} is {_js(value)}, not a JSONObject")
        self.value = value
        self.where = where

    def _get(self, key: str) -> Any:
        if key not in self.value:
            raise ClientBroke(f"org.json: JSONException: No value for {key} at {self.where}")
        return self.value[key]

    def has(self, key: str) -> bool:
        return key in self.value

    def isNull(self, key: str) -> bool:  # the Java method's name
        return self.value.get(key) is None

    def getString(self, key: str) -> str:
        value = self._get(key)
        if value is None:
            return "null"  # JSONObject.NULL.toString()
        return value if isinstance(value, str) else _java_string(value)

    def getInt(self, key: str) -> int:
        return int(self._number(key))

    def getLong(self, key: str) -> int:
        return int(self._number(key))

    def getDouble(self, key: str) -> float:
        return float(self._number(key))

    def _number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or value is None or isinstance(value, list | dict):
            raise ClientBroke(f"org.json: {key} at {self.where} is {_js(value)}, not a number")
        try:
            return float(value)
        except ValueError:
            raise ClientBroke(
                f"org.json: {key} at {self.where}: {value!r} is not a number"
            ) from None

    def getBoolean(self, key: str) -> bool:
        value = self._get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ClientBroke(f"org.json: {key} at {self.where} is {_js(value)}, not a boolean")

    def getJSONObject(self, key: str) -> OrgJson:
        return OrgJson(self._get(key), f"{self.where}.{key}")

    def getJSONArray(self, key: str) -> list[Any]:
        value = self._get(key)
        if not isinstance(value, list):
            raise ClientBroke(f"org.json: {key} at {self.where} is {_js(value)}, not a JSONArray")
        return value

    def optString(self, key: str, fallback: str = "") -> str:
        value = self.value.get(key)
        if value is None:
            return fallback
        return value if isinstance(value, str) else _java_string(value)

    def optBoolean(self, key: str, fallback: bool = False) -> bool:
        value = self.value.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return fallback

    def optInt(self, key: str, fallback: int = 0) -> int:
        value = self.value.get(key)
        try:
            return int(float(value)) if not isinstance(value, bool | list | dict) else fallback
        except (TypeError, ValueError):
            return fallback

    def optJSONObject(self, key: str) -> OrgJson | None:
        value = self.value.get(key)
        return OrgJson(value, f"{self.where}.{key}") if isinstance(value, dict) else None

    def optJSONArray(self, key: str) -> list[Any] | None:
        value = self.value.get(key)
        return value if isinstance(value, list) else None


def org_json_objects(array: list[Any], where: str = "$") -> list[OrgJson]:
    """`array.getJSONObject(i)` for every i."""
    return [OrgJson(item, f"{where}[{i}]") for i, item in enumerate(array)]


# --- Swift: JSONSerialization and casts ------------------------------------------------------


def swift(value: Any, kind: type | str, forced: bool = True, where: str = "$") -> Any:
    """`value as! T` (forced: a mismatch crashes the app) or `as? T` (None on a mismatch).

    Kinds: str, int, float, bool, list ([Any]), dict ([String: Any]), "[[String: Any]]".
    An NSNumber casts to Int, Double and Bool alike; a string never casts to a number.
    """
    ok: bool
    if kind is str:
        ok = isinstance(value, str)
    elif kind in (int, float):
        ok = isinstance(value, int | float) and (
            kind is float or isinstance(value, bool) or float(value).is_integer()
        )
    elif kind is bool:
        ok = isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))
    elif kind is list:
        ok = isinstance(value, list)
    elif kind is dict:
        ok = isinstance(value, dict)
    elif kind == "[[String: Any]]":
        ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    else:
        raise TypeError(f"not a Swift kind: {kind!r}")
    if ok:
        return value
    if forced:
        name = getattr(kind, "__name__", kind)
        raise ClientBroke(f"Swift: `as! {name}` crashed on {_js(value)} at {where}")
    return None


# --- JavaScript ------------------------------------------------------------------------------


def js_includes(value: Any, item: Any, where: str = "$") -> bool:
    """`value.includes(item)`: a TypeError unless value is an array or a string."""
    if isinstance(value, list):
        return item in value
    if isinstance(value, str):
        return isinstance(item, str) and item in value
    raise ClientBroke(f"JavaScript: TypeError: {where}.includes is not a function ({_js(value)})")


def js_get(value: Any, *path: str | int) -> Any:
    """`a.b.c` in JavaScript: undefined for a missing property, a TypeError reading through
    undefined or null."""
    for step in path:
        if value is None:
            raise ClientBroke(
                f"JavaScript: TypeError: cannot read properties of undefined ({step})"
            )
        if isinstance(value, dict):
            value = value.get(step)
        elif isinstance(value, list) and isinstance(step, int):
            value = value[step] if 0 <= step < len(value) else None
        elif isinstance(value, list) and step == "length":
            value = len(value)
        else:
            value = None
    return value
