"""Why a resolution answered as it did (resolver-v1.md): the optional `evidence` of a resolution.

Its own module because `events.py` carries it and `works.py` (which imports `events.py`) re-exports it.
"""

from __future__ import annotations

from msgspec import Struct


class RunnerUp(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """The best candidate after the one chosen (or after the best, when none was chosen)."""

    catalogue_seq: int
    doi: str | None
    arxiv_id: str | None
    score: int


class Evidence(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """Why the resolver answered as it did: not part of the record's JSON."""

    method: str  # e.g. "identifier", "title-author-year", "search-validate"
    catalogue_seq: int | None  # the seq of the catalogue event matched; None when nothing matched
    score: int
    agreed: list[str]  # the fields of the reference found in the work: "title", "year", ...
    disagreed: list[str]
    runner_up: RunnerUp | None
