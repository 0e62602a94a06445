"""The pull reader of bundle files (service/bundle_json.py): members one at a time, array elements as
exact byte spans with their offsets, whatever the spacing, the read size or what strings hold."""

from __future__ import annotations

import io
import json
from typing import Any

import msgspec
import pytest

from service.proofs.bundle_json import JsonReader, Malformed

ANY = msgspec.json.Decoder()
ITEMS: list[Any] = [
    {"a": 1, "b": "x"},
    {"title": "a},{b", "t2": "}]", "t3": '"},{"data":'},  # candidate ends inside strings
    {"notices": [{"k": 1}, {"k": 2}], "n": {"deep": [{"x": []}]}},  # inner objects end with `},{` / `}]`
    {"esc": '\u00e9 " \\ }', "num": -12.5e3},  # escapes, UTF-8, a float
    {},
    [1, 2, {"z": 3}],  # not an object: found by the scanner
    "a string",
    12345678901234567890,
    None,
]


def _doc(items: list[Any], spacing: str) -> bytes:
    if spacing == "compact":
        return msgspec.json.encode({"head": "h", "items": items, "tail": {"t": [1, 2]}})
    indent = 2 if spacing == "indented" else None
    return json.dumps({"head": "h", "items": items, "tail": {"t": [1, 2]}}, indent=indent).encode()


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 20])
@pytest.mark.parametrize("spacing", ["compact", "indented", "spaced"])
def test_elements_are_exact_spans_at_their_offsets(chunk: int, spacing: str) -> None:
    doc = _doc(ITEMS, spacing)
    reader = JsonReader(io.BytesIO(doc), chunk=chunk)
    seen: dict[str, Any] = {}
    for key in reader.members():
        if key == "items":
            got = list(reader.elements(ANY, "$.items"))
            assert [value for _, _, value in got] == json.loads(json.dumps(ITEMS))
            for offset, raw, value in got:
                assert doc[offset : offset + len(raw)] == raw
                assert msgspec.json.decode(raw) == value
            seen[key] = True
        else:
            seen[key] = reader.value(ANY, f"$.{key}")
    reader.end()
    assert seen == {"head": "h", "items": True, "tail": {"t": [1, 2]}}


@pytest.mark.parametrize("chunk", [2, 1 << 20])
def test_an_empty_array_and_object(chunk: int) -> None:
    reader = JsonReader(io.BytesIO(b' { "a" : [ ] , "b" : { } } '), chunk=chunk)
    keys = []
    for key in reader.members():
        keys.append(key)
        if key == "a":
            assert list(reader.elements(ANY, "$.a")) == []
        else:
            assert reader.value(ANY, "$.b") == {}
    reader.end()
    assert keys == ["a", "b"]


class _Item(msgspec.Struct, forbid_unknown_fields=True):
    n: int


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(b'{"a":[{"n":1},{"n":"2"}]}', r"got `str` - at `\$\.a\[1\]\.n`", id="a-type"),
        pytest.param(b'{"a":[{"n":1},{"m":2}]}', r"unknown field `m` - at `\$\.a\[1\]`", id="a-field"),
        pytest.param(b'{"a":[{"n":1} {"n":2}]}', r"expected ',' or '\]'", id="no-comma"),
        pytest.param(b'{"a":[{"n":1},', r"expected a value, found the end", id="cut-off"),
        pytest.param(b'{"a":[{"n":1}]} x', r"trailing characters", id="trailing"),
        pytest.param(b'{"a":[{"n":1]}', r"JSON is malformed", id="unbalanced"),
    ],
)
def test_what_is_wrong_is_named(doc: bytes, message: str) -> None:
    reader = JsonReader(io.BytesIO(doc), chunk=4)
    with pytest.raises(Malformed, match=message):
        for _ in reader.members():
            list(reader.elements(msgspec.json.Decoder(_Item), "$.a"))
        reader.end()


def test_a_value_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("service.proofs.bundle_json.MAX_VALUE", 64)
    reader = JsonReader(io.BytesIO(b'{"a":"' + b"x" * 1000 + b'"}'), chunk=16)
    with pytest.raises(Malformed, match="longer than 64 bytes"):
        for _ in reader.members():
            reader.value(ANY, "$.a")
