"""Checking an offline bundle of either kind with no database: pass 1 (bundle_check.py) says which it
is, then a record's bundle is rebuilt (bundle_check.py) or a screen's rows are held to their events
(screen_check.py)."""

from __future__ import annotations

import io
from pathlib import Path

from ledger.tlog.checkpoint import Verifier
from ledger.tlog.cosign import NO_QUORUM, Quorum
from service.proofs.bundle_check import BundleReport, Opener, finish_record, first_pass
from service.proofs.screen_check import finish_screen


def check_bundle(raw: bytes, pinned: Verifier, quorum: Quorum = NO_QUORUM) -> BundleReport:
    """Check an evidence bundle held in memory against a pinned key (see check_bundle_file)."""
    return _check(lambda: io.BytesIO(raw), pinned, quorum)


def check_bundle_file(path: str | Path, pinned: Verifier, quorum: Quorum = NO_QUORUM) -> BundleReport:
    """Check an evidence bundle file, a record's or a screen's, against a pinned key (and a quorum of
    witnesses' cosignatures on its checkpoint, when asked), with no database: names every failure."""
    return _check(lambda: open(path, "rb"), pinned, quorum)  # noqa: SIM115 (each pass closes what it opens)


def _check(opener: Opener, pinned: Verifier, quorum: Quorum) -> BundleReport:
    read = first_pass(opener, pinned, quorum)
    if isinstance(read, BundleReport):
        return read
    seen, screen = read
    return finish_screen(opener, seen) if screen else finish_record(opener, seen, pinned)
