"""Loaded by a `ledger serve` a test starts with this directory on PYTHONPATH (never otherwise): the
resolver's matcher then raises on a reference holding MARKER, as a bug in it would, and each time it
reads one a line is added to the file $RESOLVER_POISON_COUNT, so a test counts how often it was tried."""

from __future__ import annotations

import os

MARKER = "POISONED-REFERENCE"


def _install(count_file: str) -> None:
    from ledger.model.resolving import RefInput
    from service.resolver import match

    real = match.read

    def read(inp: RefInput) -> object:
        text = getattr(inp.reference, "unstructured", None)
        if isinstance(text, str) and MARKER in text:
            with open(count_file, "a") as f:
                f.write(inp.observation_id + "\n")
            raise RuntimeError("the matcher cannot read this reference")
        return real(inp)

    match.read = read  # type: ignore[assignment]


if os.environ.get("RESOLVER_POISON_COUNT"):
    _install(os.environ["RESOLVER_POISON_COUNT"])
