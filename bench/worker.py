"""Jobs run in their own process, so that each one's peak RSS and timing are its own.

python -m bench.worker JOB ARGS...   (JSON answer on the last line of stdout)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.util import vm_hwm_kb
from ledger.storage.backend import is_pg_url


def main() -> None:
    """Dispatch one job and print its answer as one JSON line."""
    job, *args = sys.argv[1:]
    profile = None
    if args and args[-1].startswith("--profile="):
        profile = args.pop().removeprefix("--profile=")
    out: dict[str, Any]
    if job == "idle":
        import api.app  # noqa: F401
        import service.ledger  # noqa: F401

        out = {}
    elif job == "peer":
        from bench.peer import measure

        out = measure(args[0], args[1], int(args[2]), [int(h) for h in args[3].split(",")], float(args[4]))
    elif job == "chain" and is_pg_url(args[0]):
        from bench.pg import bare_chain as pg_chain

        out = pg_chain(args[0])
    elif job == "chain":
        from bench.baselines import bare_chain

        out = bare_chain(Path(args[0]))
    else:
        from bench import library

        db: str | Path = args[0] if is_pg_url(args[0]) else Path(args[0])  # a URL is no path
        if job == "build":
            out = library.build(db, int(args[1]), int(args[2]))
        elif job == "append":
            out = library.append_batches(db, int(args[1]), int(args[2]), profile)
        elif job == "concurrent":
            out = library.concurrent(db, int(args[1]), int(args[2]), float(args[3]), profile)
        elif job == "project":
            out = library.project(db, args[1], args[2], int(args[3]), profile)
        elif job == "verify":
            out = library.verify(db, profile)
        else:
            raise SystemExit(f"unknown job {job!r}")
    # a job that profiles read its peak before the profile run (pyinstrument keeps every sample)
    out.setdefault("vm_hwm_kb", vm_hwm_kb())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
