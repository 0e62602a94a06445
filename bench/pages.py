"""What an append writes to the disk, table by table: the physical cost under the SQLite append figures.

Builds (or reuses) a synthetic ledger of N events, appends 10 batches of 1000 events to a copy of it at
synchronous=FULL with the WAL's automatic checkpoint off, then reads the WAL: each frame is one page a
commit wrote, named by the table or index that owns it (SQLite's dbstat). It prints WAL frames and
distinct pages per event for each, then times the checkpoint that writes those pages into the
database file, and a bare write of as many bytes in one sequential file, on the same disk.

    .venv/bin/python -m bench.pages --events 1000000
"""

from __future__ import annotations

import argparse
import collections
import os
import struct
import time
from pathlib import Path

from bench import library, pools
from bench.util import DATA, copy_db
from service.ledger import Ledger

_FRAME_HEADER = 24
_WAL_HEADER = 32


def wal_pages(wal: bytes) -> tuple[int, collections.Counter[int]]:
    """(page size, frames per page number) of a WAL file's bytes."""
    page_size = struct.unpack(">I", wal[8:12])[0]
    frames: collections.Counter[int] = collections.Counter()
    for offset in range(_WAL_HEADER, len(wal) - _FRAME_HEADER + 1, _FRAME_HEADER + page_size):
        frames[struct.unpack(">I", wal[offset : offset + 4])[0]] += 1
    return page_size, frames


def measure(events: int, batches: int = 10) -> dict[str, object]:
    """Append `batches` batches to a copy of an `events`-event ledger; what the WAL and checkpoint hold."""
    DATA.mkdir(parents=True, exist_ok=True)
    base = DATA / f"pages-{events}.db"
    marker = base.with_suffix(".next")
    if not marker.exists():
        built = library.build(base, events, 0)
        marker.write_text(str(built["next_paper"]))
    work = pools.batches(int(marker.read_text()), batches)
    copy = DATA / "pages-copy.db"
    copy_db(base, copy)
    ledger = Ledger(copy)
    conn = ledger.store._conn()  # type: ignore[attr-defined]
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = ledger.head().seq
    for batch in work:
        ledger.append(batch, typed=True)
    appended = ledger.head().seq - before
    page_size, frames = wal_pages(Path(f"{copy}-wal").read_bytes())
    owner = {page: name for name, page in conn.execute("SELECT name, pageno FROM dbstat")}
    by_frames: collections.Counter[str] = collections.Counter()
    by_pages: collections.Counter[str] = collections.Counter()
    for page, n in frames.items():
        name = owner.get(page, "(new or free pages)")
        by_frames[name] += n
        by_pages[name] += 1
    start = time.perf_counter()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    checkpoint = time.perf_counter() - start
    ledger.close()
    # the same number of bytes written once, sequentially, to a new file on the same disk, and synced
    blob = os.urandom(len(frames) * page_size)
    seq_file = DATA / "pages-sequential.bin"
    start = time.perf_counter()
    with open(seq_file, "wb") as f:
        f.write(blob)
        f.flush()
        os.fsync(f.fileno())
    sequential = time.perf_counter() - start
    seq_file.unlink()
    return {
        "events": events,
        "appended": appended,
        "page_size": page_size,
        "frames_per_event": round(sum(frames.values()) / appended, 3),
        "distinct_pages_per_event": round(len(frames) / appended, 3),
        "by_table": {
            name: {"frames": round(n / appended, 3), "pages": round(by_pages[name] / appended, 3)}
            for name, n in by_frames.most_common()
        },
        "checkpoint_us_per_event": round(checkpoint / appended * 1e6, 1),
        "checkpoint_us_per_page": round(checkpoint / len(frames) * 1e6, 1),
        "sequential_us_per_page": round(sequential / len(frames) * 1e6, 1),
    }


def main() -> None:
    """Print what one ledger size's appends write, per event and table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    m = measure(args.events)
    print(f"{m['appended']} events appended to a ledger of {m['events']:,}: {m['frames_per_event']} WAL")
    print(f"frames and {m['distinct_pages_per_event']} distinct pages ({m['page_size']} bytes) an event")
    for name, v in m["by_table"].items():  # type: ignore[attr-defined]
        print(f"  {v['frames']:6.3f} frames  {v['pages']:6.3f} pages  {name}")
    print(f"checkpoint: {m['checkpoint_us_per_event']} us an event, {m['checkpoint_us_per_page']} us a page; "
          f"the same bytes written sequentially: {m['sequential_us_per_page']} us a page")  # fmt: skip


if __name__ == "__main__":
    main()
