"""A progress line for long commands: lines, rate and time left on a terminal, nothing otherwise."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import IO

from service.intake.load import APPENDING, CHECKING, WALKING

# what an import does after each phase: its time left is said for the phase under way, and the phases
# after it are named, since their pace is unknown until they start (an append is slower than a check)
NEXT = {CHECKING: "then the appends", APPENDING: "then a last walk of the chain"}
WINDOW_S = 5.0  # the pace is the one of the last few seconds: an early burst or a stall fades


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Meter:
    """Redraws one line of `out` (a terminal) at most `every` seconds: the phase, lines, their rate and
    the time left in the phase, from the bytes read over the last `window` seconds, then what comes
    after it (an import reads its file twice, a check then the appends, and walks the chain at the
    end). `clock` is the monotonic clock (a test gives its own)."""

    def __init__(
        self,
        out: IO[str],
        label: str,
        every: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        window: float = WINDOW_S,
    ) -> None:
        self.out = out
        self.label = label
        self.every = every
        self.clock = clock
        self.window = window
        self.phase = ""
        self.phase_began = self.last = clock()  # `last`: the latest count's time, where a next phase begins
        self.seen: deque[tuple[float, int, int]] = deque()  # (time, lines, bytes read) in this phase
        self.drawn = float("-inf")
        self.width = 0

    def update(self, phase: str, lines: int, read: int, size: int) -> None:
        """Take the latest count; redraw when the last drawing is old enough (or the phase changed)."""
        now = self.clock()
        if phase != self.phase:
            # a phase starts from nothing read, when the one before ended: its pace is its own
            self.phase, self.phase_began = phase, self.last
            self.seen = deque([(self.last, 0, 0)])
            self.drawn = float("-inf")
        self.last = now
        self.seen.append((now, lines, read))
        while len(self.seen) > 2 and self.seen[1][0] <= now - self.window:
            self.seen.popleft()
        if now - self.drawn < self.every:
            return
        self.drawn = now
        self._draw(self.text(phase, lines, read, size, now))

    def text(self, phase: str, lines: int, read: int, size: int, now: float) -> str:
        """The line for this count: the pace of the window, the share of the file read, the time left."""
        if phase == WALKING:
            so_far = _duration(now - self.phase_began)
            return f"{self.label}: walking the chain over what was appended, {so_far} so far"
        t0, lines0, read0 = self.seen[0]
        took = now - t0
        rate = (lines - lines0) / took if took > 0 else 0.0
        byte_rate = (read - read0) / took if took > 0 else 0.0
        done = min(read, size) / size if size else 1.0
        if read >= size:
            left = "done"
        elif byte_rate > 0:
            left = f"ETA {_duration((size - read) / byte_rate)} for this pass"
        else:
            left = "ETA not known yet"
        after = NEXT.get(phase)
        return f"{self.label}: {phase} {lines:,} lines, {rate:,.0f} lines/s, {done:.0%} read, {left}" + (
            f", {after}" if after else ""
        )

    def _draw(self, text: str) -> None:
        self.width = max(self.width, len(text))
        self.out.write("\r" + text.ljust(self.width))
        self.out.flush()

    def close(self) -> None:
        """Clear the line, so what is printed next starts on a clean one."""
        if self.width:
            self.out.write("\r" + " " * self.width + "\r")
            self.out.flush()
            self.width = 0
