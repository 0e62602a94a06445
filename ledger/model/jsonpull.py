"""The read buffer under the pull readers of big JSON files (service/proofs/bundle_json.py over bytes,
service/sources/jsonstream.py over text): a cursor into a window of the file, read on a chunk at a time,
that refuses to hold a value longer than a bound (a bomb, not data).
"""

from __future__ import annotations

import re
from typing import IO, AnyStr, Generic, cast

_NON_WS: dict[type, re.Pattern[bytes] | re.Pattern[str]] = {
    bytes: re.compile(rb"[^ \t\n\r]"),
    str: re.compile(r"[^ \t\n\r]"),
}


class PullBuffer(Generic[AnyStr]):
    """A window of a file and a cursor in it; `unit` ("byte", "character") names offsets in errors."""

    def __init__(
        self, f: IO[AnyStr], empty: AnyStr, chunk: int, max_value: int, error: type[ValueError], unit: str
    ) -> None:
        self._f: IO[AnyStr] = f
        self._chunk = chunk
        self._max_value = max_value
        self._error = error
        self._unit = unit
        self._non_ws: re.Pattern[AnyStr] = cast("re.Pattern[AnyStr]", _NON_WS[type(empty)])
        self._buf: AnyStr = empty
        self._pos = 0
        self._base = 0  # the file offset of _buf[0]: what was consumed and released
        self._eof = False

    def offset(self) -> int:
        """The file offset of the cursor (in `unit`s)."""
        return self._base + self._pos

    def _more(self, at_least: int = 0) -> bool:
        """Read on (at least `at_least`, so retrying a long value stays linear); False at the end."""
        if self._eof:
            return False
        data = self._f.read(max(self._chunk, at_least))
        if not data:
            self._eof = True
            return False
        self._base += self._pos
        self._buf = self._buf[self._pos :] + data
        self._pos = 0
        if len(self._buf) > self._max_value + self._chunk:  # more than one value and a read ahead
            raise self._error(
                f"a value at {self._unit} {self.offset()} is longer than {self._max_value} {self._unit}s"
            )
        return True

    def _skip_space(self) -> bool:
        """Move the cursor to the next byte or character that is not a space; False at the end."""
        while True:
            m = self._non_ws.search(self._buf, self._pos)
            if m is not None:
                self._pos = m.start()
                return True
            self._pos = len(self._buf)
            if not self._more():
                return False
