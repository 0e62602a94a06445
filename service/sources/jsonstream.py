"""A small pull parser over a text stream: walk objects and arrays, decode one value at a time.

Big answers (a Crossref `/works` dump, an OpenAlex page) are read item by item, so memory holds
one item and one read buffer, not the file. Leaf values are decoded by the json module's C scanner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, cast

from ledger.model.jsonpull import PullBuffer
from ledger.model.jsonvalue import Json, JsonObject

_NUMBER = re.compile(r"[-+0-9.eE]*")
_CHUNK = 1 << 16
# One item of a dump (a work, a page's metadata) is kilobytes; a bigger one is a bomb, not data.
MAX_VALUE_CHARS = 32 * 1024 * 1024


class JsonSyntaxError(ValueError):
    """The text is not JSON (at the given character offset)."""


# Python's int() refuses more digits than this (ValueError); no count or year a source sends comes near.
MAX_INT_DIGITS = 4300


def _int(text: str) -> int:
    # counted before int() reads it, so a long one is the file's fault, said as such
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise JsonSyntaxError(f"an integer of {len(text)} characters (more than {MAX_INT_DIGITS} digits)")
    return int(text)


class JsonStream(PullBuffer[str]):
    """Cursor over JSON text: `peek`, `members` (keys) of an object, `elements` of an array, `value`."""

    def __init__(self, text: IO[str], chunk: int = _CHUNK) -> None:
        super().__init__(text, "", chunk, MAX_VALUE_CHARS, JsonSyntaxError, "character")
        self._decoder = json.JSONDecoder(parse_int=_int)

    def peek(self) -> str:
        """The next non-space character without consuming it ('' at the end)."""
        return self._buf[self._pos] if self._skip_space() else ""

    def _expect(self, ch: str) -> None:
        got = self.peek()
        if got != ch:
            raise JsonSyntaxError(f"expected {ch!r} at character {self.offset()}, found {got or 'the end'!r}")
        self._pos += 1

    def value(self) -> Json:
        """Decode the next complete value."""
        first = self.peek()
        if first == "":
            raise JsonSyntaxError(f"expected a value at character {self.offset()}, found the end")
        if first in "-0123456789":
            # a number cut by the buffer's end ("12" of "1234", "1.5" of "1.5e3") would decode short
            # without an error: read on until a character that cannot be part of it is buffered
            while self._number_end() == len(self._buf) and self._more():
                pass
        while True:
            try:
                value: Json
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as e:
                # an incomplete string, object, array or literal fails: read on and retry
                if self._more(len(self._buf) - self._pos):
                    continue
                raise JsonSyntaxError(f"{e.msg} at character {self._base + e.pos}") from None
            self._pos = end
            return value

    def _number_end(self) -> int:
        m = _NUMBER.match(self._buf, self._pos)
        return self._pos if m is None else m.end()

    def members(self) -> Iterator[str]:
        """Each key of the object here; the caller consumes its value before asking for the next."""
        more = self._open("{", "}")
        while more:
            if self.peek() != '"':
                raise JsonSyntaxError(f"expected a key at character {self.offset()}")
            # a value that starts with a quote decodes to a str
            key = cast(str, self.value())
            self._expect(":")
            yield key
            more = self._after_item("}")

    def elements(self) -> Iterator[int]:
        """The index of each element of the array here; the caller consumes each element."""
        i, more = 0, self._open("[", "]")
        while more:
            yield i
            i += 1
            more = self._after_item("]")

    def _open(self, opening: str, closing: str) -> bool:
        """Consume `opening`; False (and the closing too) if the object or array is empty."""
        self._expect(opening)
        if self.peek() == closing:
            self._pos += 1
            return False
        return True

    def _after_item(self, closing: str) -> bool:
        """Consume the separator after a member or element: True at ',', False at `closing`."""
        sep = self.peek()
        self._pos += 1
        if sep == closing:
            return False
        if sep != ",":
            raise JsonSyntaxError(f"expected ',' or {closing!r} at character {self.offset() - 1}")
        return True

    def end(self) -> None:
        """Refuse anything after the top-level value."""
        if self.peek() != "":
            raise JsonSyntaxError(f"unexpected data after the JSON value at character {self.offset()}")


def items_or_object(js: JsonStream, list_key: str) -> Iterator[tuple[str, Json]]:
    """At an object: ("item", x) for each element of its `list_key` array, then ("rest", the other
    keys) when that array was streamed, or ("object", the object itself) when it held none.

    The other keys are small (paging metadata); with no list the object is one item (one work).
    """
    rest: JsonObject = {}
    streamed = False  # whether the list key's last value was an array, handed out item by item
    for key in js.members():
        if key == list_key and js.peek() == "[":
            for _ in js.elements():
                yield "item", js.value()
            streamed = True
            rest.pop(key, None)
        else:
            rest[key] = js.value()
            streamed = streamed and key != list_key
    yield ("rest" if streamed else "object"), rest
