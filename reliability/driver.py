"""The command line the load drivers share: integer options and --db in, the figures out as JSON."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Option = tuple[str, int, str | None]  # --flag, default, help


def main(doc: str | None, name: str, run: Callable[..., dict[str, Any]], options: Sequence[Option]) -> None:
    """Parse `options` and --db; call run(workdir, first option, the others and db by name); print JSON.

    The workdir is a new temporary directory, removed afterwards.
    """
    p = argparse.ArgumentParser(description=doc)
    for flag, default, help_ in options:
        p.add_argument(f"--{flag}", type=int, default=default, help=help_)
    p.add_argument("--db", help="an empty ledger (postgresql:// URL); default: a new SQLite file")
    a = vars(p.parse_args())
    size = a.pop(options[0][0].replace("-", "_"))
    with tempfile.TemporaryDirectory(prefix=f"ledger-{name}-") as tmp:
        figures = run(Path(tmp), size, **a)
    print(json.dumps(figures, indent=2))
