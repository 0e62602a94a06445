"""What a per-event path in compiled code could gain: the import's Python work an event, with no database,
against the compiled calls (msgspec, blake3, SHA-256, zstandard, str formatting, fromisoformat) that work
makes on the same events.

    .venv/bin/python -m bench.compiled_path [--events 20000]

`whole`: per line, what `ledger import` runs in Python outside the database: the check's decode
(`quick_event`), its rules (`check_rules`), its fingerprint of the line (service/intake/check.py
`_Line`), the spill's frames written and read back, and `append_batch`'s work over a transaction that
stores nothing (bench/python_path.py). `calls`: only the compiled calls that work makes, on the same
lines, each kind in one comprehension: the JSON decode into the typed event, the canonical encode of
its data (once: the append takes the check's from the spill), the SHA-1 of the derived id (the
check's key and fingerprint) and the blake3 chain link, the body's formatting and the event id's JSON
string, the instants' `fromisoformat`, the spill's msgpack and zstandard. `whole - calls` is the
interpreter's own work around those calls: the most a per-event path compiled end to end could save,
since it must still make the same calls (or their equivalents in its own language). Nothing here is a
test; no time is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec
import zstandard
from blake3 import blake3

from bench.python_path import _NoStore
from bench.synth import Synth
from ledger.model.codec import check_rules, event_to_dict, plain_event, quick_event
from ledger.model.events import Event
from ledger.model.instants import SYSTEM_CLOCK
from ledger.storage.append import append_batch
from service.intake.check import _Line
from service.intake.spill import Spill

_BODY = (
    b'{"data":%b,"event_id":%b,"observed_at":%b,"recorded_at":%b,"seq":%d,"stream":%b,'
    b'"stream_version":%d,"type":%b}'
)


def _lines(n: int) -> list[bytes]:
    events: list[Event] = []
    for _, evs in Synth().events():
        events.extend(evs)
        if len(events) >= n:
            break
    return [msgspec.json.encode(event_to_dict(e)) for e in events[:n]]


def _cpu(go: Callable[[], Any], repeat: int = 3) -> float:
    """The best of `repeat` runs' CPU seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        go()
        best = min(best, time.process_time() - start)
    return best


def whole(lines: list[bytes]) -> None:
    """The import's per-line Python work, no database."""
    now = SYSTEM_CLOCK.now_us()
    spill = Spill()
    try:
        for at in range(0, len(lines), 1000):
            numbered = []
            for n, raw in enumerate(lines[at : at + 1000], start=at + 1):
                where = f"line {n}"
                event = quick_event(raw)
                assert event is not None
                x = _Line(event, n, where, check_rules(event, where, now))
                numbered.append((n, event, (x.data, x.id, x.observed_us)))
            spill.write(numbered)
        tx = _NoStore()
        for frame in spill.read():
            append_batch(
                tx, [e for _, e, _ in frame], places=[f"line {n}" for n, _, _ in frame], clock=SYSTEM_CLOCK,
                encoded=[x for _, _, x in frame],
            )  # fmt: skip
    finally:
        spill.close()


def calls(lines: list[bytes]) -> None:
    """Only the compiled calls the same work makes, on the same lines."""
    encode = msgspec.json.Encoder(order="sorted").encode
    string = msgspec.json.Encoder().encode
    events = [plain_event(raw) for raw in lines]
    datas = [encode(e.data) for e in events]
    # the derived id (the check's key and fingerprint, which the append takes from the spill)
    [
        hashlib.sha1(b'{"data":' + d + b',"observed_at":' + string(e.observed_at) + b',"type":"t"}').digest()
        for e, d in zip(events, datas, strict=True)
    ]
    stamp = string("2026-12-06T08:00:00.000000Z")
    prev = bytes(32)
    bodies = [
        _BODY % (d, string(e.event_id), string(e.observed_at), stamp, i, b'"paper:x"', 1, b'"t"')
        for i, (e, d) in enumerate(zip(events, datas, strict=True))
    ]
    [blake3(prev + b).digest().hex() for b in bodies]
    [datetime.fromisoformat(e.observed_at.replace("Z", "+00:00")) for e in events]
    packed = msgspec.msgpack.Encoder().encode
    spilled = [(i, e, (d, "", i)) for i, (e, d) in enumerate(zip(events, datas, strict=True))]
    frames = [zstandard.compress(packed(spilled[k : k + 1000])) for k in range(0, len(events), 1000)]
    decode = msgspec.msgpack.Decoder(list[tuple[int, Event, tuple[bytes, str, int]]]).decode
    [decode(zstandard.decompress(f)) for f in frames]


def main() -> None:
    """Print the two figures a line and their difference."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=20_000)
    args = ap.parse_args()
    lines = _lines(args.events)
    n = len(lines)
    w = _cpu(lambda: whole(lines)) / n * 1e6
    c = _cpu(lambda: calls(lines)) / n * 1e6
    print(json.dumps({"events": n, "whole_us": round(w, 1), "compiled_calls_us": round(c, 1),
                      "interpreter_us": round(w - c, 1)}))  # fmt: skip


if __name__ == "__main__":
    main()
