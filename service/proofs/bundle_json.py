"""A pull reader over one JSON object in a binary file: its members one at a time, the elements of an
array member as byte spans with their byte offsets, in memory bounded by a read buffer and one element.

Elements are found fast and exactly: a candidate end is a `}` followed by `,{` or `]` (spaces
allowed), and a candidate is the element only if the element's decoder takes all of it (a JSON value
that decodes whole ends where it ends: no shorter or longer span does). An element that is not an
object, or whose candidates keep failing, is delimited by the json module's scanner instead, as every
other value is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, TypeVar

import msgspec

from ledger.model.jsonpull import PullBuffer

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_OBJECT_END = re.compile(rb"\}(?=[ \t\n\r]*(?:,[ \t\n\r]*\{|\]))")
_TRIES = 16  # candidate ends tried before the exact scan (a check with many notices has more)
# Only delimits a value (msgspec decodes it, refusing what does not fit): numbers are not read, so a
# long one cannot make int() raise (past 4,300 digits) or spend time quadratic in its length.
_SCANNER = json.JSONDecoder(parse_int=lambda _: None, parse_float=lambda _: None)
_KEY = msgspec.json.Decoder(str)
T = TypeVar("T")
CHUNK = 1 << 20
MAX_VALUE = 64 << 20  # one event or proof is kilobytes: a bigger value is a bomb, not evidence


class Malformed(ValueError):
    """Not the JSON expected; the message says what and where (in msgspec's words where it can)."""


class JsonReader(PullBuffer[bytes]):
    """Cursor over the bytes of one JSON document read from a binary file, a chunk at a time."""

    def __init__(self, f: IO[bytes], chunk: int = CHUNK) -> None:
        super().__init__(f, b"", chunk, MAX_VALUE, Malformed, "byte")

    def peek(self) -> int:
        """The next byte that is not a space, not consumed (-1 at the end)."""
        return self._buf[self._pos] if self._skip_space() else -1

    def _expect(self, ch: bytes) -> None:
        got = self.peek()
        if got != ch[0]:
            found = "the end" if got < 0 else repr(chr(got))
            raise Malformed(
                f"JSON is malformed: expected {ch.decode()!r}, found {found} (byte {self.offset()})"
            )
        self._pos += 1

    def members(self) -> Iterator[str]:
        """Each key of the object here; the caller reads its value before asking for the next."""
        self._expect(b"{")
        if self.peek() == ord("}"):
            self._pos += 1
            return
        while True:
            yield self._key()
            if not self._after(b"}"):
                return

    def _key(self) -> str:
        if self.peek() != ord('"'):
            raise Malformed(f"JSON is malformed: expected a key (byte {self.offset()})")
        while (m := _STRING.match(self._buf, self._pos)) is None:
            if not self._more():
                raise Malformed(f"JSON is malformed: an unterminated key (byte {self.offset()})")
        key = self._decode(m.group(), _KEY, "a key")
        self._pos = m.end()
        self._expect(b":")
        return key

    def _after(self, closing: bytes) -> bool:
        """Consume the separator after a member or element: True at ',', False at `closing`."""
        got = self.peek()
        self._pos += 1
        if got == closing[0]:
            return False
        if got != ord(","):
            self._pos -= 1
            raise Malformed(f"JSON is malformed: expected ',' or {closing.decode()!r} (byte {self.offset()})")
        return True

    def end(self) -> None:
        """Refuse anything after the document's value."""
        if self.peek() >= 0:
            raise Malformed(f"JSON is malformed: trailing characters (byte {self.offset()})")

    def value(self, decoder: msgspec.json.Decoder[T], where: str) -> T:
        """The next value, decoded by `decoder` (msgspec's rules; the error names `where`)."""
        return self._decode(self._span(), decoder, where)

    def elements(self, decoder: msgspec.json.Decoder[T], where: str) -> Iterator[tuple[int, bytes, T]]:
        """(file offset, bytes, decoded value) of each element of the array here."""
        self._expect(b"[")
        if self.peek() == ord("]"):
            self._pos += 1
            return
        i = 0
        while True:
            buf, pos = self._buf, self._pos
            # the common case (a bundle as written): an object right here, ending at the first candidate
            m = _OBJECT_END.search(buf, pos + 1) if pos < len(buf) and buf[pos] == 0x7B else None
            found: tuple[T] | None = None  # the element, when decoded on the fast path
            if m is not None:
                try:
                    found = (decoder.decode(buf[pos : m.end()]),)
                except msgspec.DecodeError:
                    found = None  # the general path below says why, or finds the end further on
            if found is not None:
                assert m is not None
                self._pos = end = m.end()
                yield self._base + pos, buf[pos:end], found[0]
                sep = buf[end]  # the lookahead saw it
                if sep == 0x2C:  # ','
                    self._pos = end + 1
                    i += 1
                    continue
                if sep == 0x5D:  # ']'
                    self._pos = end + 1
                    return
            else:
                self.peek()  # the element's own first byte, past any space
                start = self.offset()
                raw, value = self._element(decoder, f"{where}[{i}]")
                yield start, raw, value
            i += 1
            if not self._after(b"]"):
                return

    def _element(self, decoder: msgspec.json.Decoder[T], where: str) -> tuple[bytes, T]:
        if self.peek() == ord("{"):
            after, tries = 1, 0  # where to look for the next candidate end, from the cursor
            while tries < _TRIES:
                m = _OBJECT_END.search(self._buf, self._pos + after)
                if m is None:
                    if self._more():
                        continue
                    break
                tries += 1
                raw = self._buf[self._pos : m.end()]
                after = m.end() - self._pos
                try:
                    value = decoder.decode(raw)
                except msgspec.ValidationError as e:
                    if not _whole(raw):
                        continue
                    raise Malformed(_at(e, where)) from None
                except msgspec.DecodeError:
                    continue
                self._pos = m.end()
                return raw, value
        raw = self._span()
        return raw, self._decode(raw, decoder, where)

    def _span(self) -> bytes:
        """The bytes of the next value, delimited by the json module's scanner."""
        if self.peek() < 0:
            raise Malformed(f"JSON is malformed: expected a value, found the end (byte {self.offset()})")
        while True:
            text = self._buf[self._pos :].decode("utf-8", "surrogateescape")
            try:
                _, end = _SCANNER.raw_decode(text)
            except json.JSONDecodeError as e:
                # an incomplete value fails: read on (at least as much again) and retry
                if self._more(len(self._buf) - self._pos):
                    continue
                at = self.offset() + len(text[: e.pos].encode("utf-8", "surrogateescape"))
                raise Malformed(f"JSON is malformed: {e.msg} (byte {at})") from None
            if end == len(text) and self._more():
                continue  # a number may go on past the buffer ("12" of "1234")
            n = len(text[:end].encode("utf-8", "surrogateescape"))
            raw = self._buf[self._pos : self._pos + n]
            self._pos += n
            return raw

    @staticmethod
    def _decode(raw: bytes, decoder: msgspec.json.Decoder[T], where: str) -> T:
        try:
            return decoder.decode(raw)
        except msgspec.DecodeError as e:
            raise Malformed(_at(e, where)) from None


def _whole(raw: bytes) -> bool:
    """Whether `raw` is one whole JSON value."""
    try:
        msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return False
    return True


def _at(err: msgspec.DecodeError, where: str) -> str:
    """msgspec's message about a part, placed in the document: "... - at `$.events[3].seq`"."""
    text = str(err)
    if not isinstance(err, msgspec.ValidationError):
        return f"{text} - at `{where}`"
    if " - at `$" in text:
        return text.replace(" - at `$", f" - at `{where}", 1)
    return f"{text} - at `{where}`"
