"""Whether a resolution's evidence names the work it resolved to: the catalogue event its evidence
points at must be a catalogue event (a `work.observed`, or a `paper.observed` for an arXiv paper)
appended before it, of the same DOI (or arXiv id) as its `cited_work`. A resolution that points at an
unrelated event passes the chain's checks (its bytes are what was appended) and fails this one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import msgspec

from ledger.model.claims import RESOLVER_PREFIX
from ledger.model.codec import decode_data
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.events import StoredEvent
from ledger.model.jsonvalue import JsonObject

RESOLUTION = "resolution.observed"
_CATALOGUE = ("work.observed", "paper.observed")
# the statuses for which the resolver always names the catalogue event it matched
_MATCHED = ("verified_exact", "verified_fuzzy", "metadata_mismatch")


class EvidenceCheck(NamedTuple):
    """One resolution checked: which catalogue event its evidence names, and the mismatch if any."""

    seq: int
    observation_id: str
    resolver_source: str | None
    catalogue_seq: int | None
    mismatch: str | None  # None: the evidence names the resolved work (or names no event, rightly)

    def to_dict(self) -> JsonObject:
        """As the integrity report and the resolution view give it."""
        return {**self._asdict(), "names_work": self.mismatch is None}


def check_resolution(resolution: StoredEvent, catalogue: Mapping[int, StoredEvent]) -> EvidenceCheck:
    """Check one stored resolution against the catalogue events it may name (by seq; an absent seq is
    one the ledger does not hold)."""
    data = decode_data(resolution.type, resolution.data)
    evidence = data.evidence
    at = None if evidence is msgspec.UNSET else evidence.catalogue_seq
    result = EvidenceCheck(resolution.seq, data.observation_id, data.resolver_source, at, None)
    if at is None:
        own = (data.resolver_source or "").startswith(RESOLVER_PREFIX)
        if own and data.status in _MATCHED:
            why = (
                f"it claims the ledger's resolver and status {data.status} but its evidence names no "
                "catalogue event"
            )
            return result._replace(mismatch=why)
        return result
    used = catalogue.get(at)
    if used is None:
        return result._replace(mismatch=f"its evidence names seq {at}, which this ledger does not hold")
    if used.seq >= resolution.seq:
        return result._replace(mismatch=f"its evidence names seq {at}, appended after the resolution")
    if used.type not in _CATALOGUE:
        return result._replace(mismatch=f"its evidence names seq {at}, a {used.type}, not a catalogue event")
    cited = data.cited_work
    if cited is None:
        return result._replace(mismatch=f"its evidence names seq {at} but it resolved to no work")
    return result._replace(mismatch=_differs(cited.doi, cited.arxiv_id, used))


def _differs(doi: str | None, arxiv_id: str | None, used: StoredEvent) -> str | None:
    """How the cited work's DOI or arXiv id differs from the catalogue event's, or None."""
    work = msgspec.json.decode(used.data)
    their_doi, their_arxiv = work.get("doi"), work.get("arxiv_id")
    at = f"seq {used.seq} ({used.type}"
    if used.type == "paper.observed":
        # an arXiv paper: named by its id, and by its DataCite DOI when the cited work gives a DOI
        if arxiv_key(arxiv_id) != arxiv_key(their_arxiv) or (
            doi is not None and doi_key(doi) != arxiv_key(their_arxiv)
        ):
            return (
                f"{at} of arXiv {their_arxiv}) does not name the resolved work (arXiv {arxiv_id}, DOI {doi})"
            )
        return None
    if doi is not None:
        if doi_key(doi) != doi_key(their_doi):
            return f"{at} of DOI {their_doi}) does not name the resolved work's DOI {doi}"
        return None
    if arxiv_id is None or arxiv_key(arxiv_id) != arxiv_key(their_arxiv):
        theirs = f"{at} of DOI {their_doi}, arXiv {their_arxiv})"
        return f"{theirs} does not name the resolved work (arXiv {arxiv_id})"
    return None


def check_resolutions(
    envelopes: list[StoredEvent], catalogue: Mapping[int, StoredEvent]
) -> list[EvidenceCheck]:
    """Each resolution among `envelopes`, checked against the catalogue events by seq."""
    return [check_resolution(e, catalogue) for e in envelopes if e.type == RESOLUTION]
