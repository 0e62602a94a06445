"""The type of a JSON value: what msgspec and the json module decode, and what the codec encodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# a value as decoded, or built to be encoded: its lists and objects are plain lists and dicts
Json: TypeAlias = None | bool | int | float | str | list["Json"] | dict[str, "Json"]
JsonObject: TypeAlias = dict[str, Json]

# what a function that only reads or encodes a value accepts: Mapping and Sequence are covariant, so a
# dict of str -> list[str] passes where dict[str, Json] would not
JsonIn: TypeAlias = None | bool | int | float | str | Sequence["JsonIn"] | Mapping[str, "JsonIn"]
JsonInObject: TypeAlias = Mapping[str, JsonIn]
