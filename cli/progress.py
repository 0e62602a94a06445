"""A progress line for long commands: lines, rate and ETA on a terminal, nothing otherwise."""

from __future__ import annotations

import time
from typing import IO


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Meter:
    """Redraws one line of `out` (a terminal) at most `every` seconds: the phase, lines, their rate and
    the time left, estimated from the bytes read (an import reads its file twice: a check, then the
    appends)."""

    def __init__(self, out: IO[str], label: str, passes: int = 2, every: float = 0.2) -> None:
        self.out = out
        self.label = label
        self.passes = passes
        self.every = every
        self.began = self.phase_began = time.monotonic()
        self.phase = ""
        self.phase_no = 0
        self.drawn = 0.0
        self.width = 0

    def update(self, phase: str, lines: int, read: int, size: int) -> None:
        """Take the latest count; redraw when the last drawing is old enough (or the phase changed)."""
        now = time.monotonic()
        if phase != self.phase:
            self.phase, self.phase_began = phase, now
            self.phase_no += 1
        elif now - self.drawn < self.every:
            return
        self.drawn = now
        took = now - self.phase_began
        rate = lines / took if took > 0 else 0.0
        done = ((self.phase_no - 1) * size + min(read, size)) / (self.passes * size) if size else 1.0
        spent = now - self.began
        left = spent * (1 - done) / done if done > 0 else 0.0
        text = (
            f"{self.label}: {phase} {lines:,} lines, {rate:,.0f} lines/s, {done:.0%}, ETA {_duration(left)}"
        )
        self.width = max(self.width, len(text))
        self.out.write("\r" + text.ljust(self.width))
        self.out.flush()

    def close(self) -> None:
        """Clear the line, so what is printed next starts on a clean one."""
        if self.width:
            self.out.write("\r" + " " * self.width + "\r")
            self.out.flush()
            self.width = 0
