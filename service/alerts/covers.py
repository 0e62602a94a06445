"""What a watch covers: the works of a paper's outbound references, of a collection's members, or of
the ledger's works a list names, each by the observation that cites it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from ledger.model.doi import work_keys
from ledger.model.errors import NotFound
from ledger.model.events import CitedWork, StoredEvent
from ledger.model.facts import Fact
from ledger.storage.derived.keys import work_index_key
from ledger.storage.derived.spans import ObservationRefs
from ledger.storage.state.alerts import Watch
from ledger.storage.works_store import KnownWork, current_works
from service.alerts.watch_spec import PAPER, WatchSpec
from service.collections import PREFIX as COLLECTION_STREAM
from service.collections import TYPE as COLLECTION_TYPE
from service.collections import fold

if TYPE_CHECKING:
    from ledger.storage.interface import Store

PAPERS_PART = 500  # papers whose events one statement reads (a collection's members)
CITATION, RESOLUTION = "citation.observed", "resolution.observed"


class Cover(NamedTuple):
    """A work a watch covers, through the observation that cites it."""

    work_id: str
    watch_id: str
    observation_id: str


class _Refs(ObservationRefs):
    cited_work: CitedWork | None = None


REFS = msgspec.json.Decoder(_Refs)


def members_at(store: Store, name: str, upto: int) -> list[str]:
    """The members of collection `name` after the events up to seq `upto` (the raiser's cursor: it
    applies the later changes itself, in their place); NotFound for a collection not made at all (a
    watch on a name nothing made would never raise an alert)."""
    events = store.read_log(stream=COLLECTION_STREAM + name, type=COLLECTION_TYPE)
    if name not in fold(events):
        raise NotFound(
            f"no collection {name!r}: make it first (ledger collection add, POST /collections/{{name}})",
            details={"collection": name},
        )
    return sorted(fold(e for e in events if e.seq <= upto).get(name, ()))


def papers_covers(store: Store, watch_id: str, papers: Sequence[str]) -> list[Cover]:
    """What a watch covers through these papers' outbound references, as the ledger stands (their
    citations and resolutions read a part of the papers per statement)."""
    covers = []
    for at in range(0, len(papers), PAPERS_PART):
        streams = [f"paper:{p}" for p in papers[at : at + PAPERS_PART]]
        for e in store.read_of(streams, (CITATION, RESOLUTION)):
            covers += event_covers(e, [watch_id], [])
    return covers


def covering_now(store: Store, watch: Watch, spec: WatchSpec, now: int) -> list[Cover]:
    """The works a new watch covers as the ledger stands at `now`."""
    if spec.kind == PAPER:
        covers = []
        for e in store.read_log(stream=f"paper:{spec.target}"):
            covers += event_covers(e, [watch.id], [])
        return covers
    # the observations the works index names under the watch's keys, each by the work it displays now
    facts = store.works.work_facts(spec.keys, now)
    by_observation: dict[str, list[Fact]] = {}
    for f in facts:
        by_observation.setdefault(f.data.observation_id, []).append(f)
    wanted = {k.removeprefix("w:") for k in spec.keys}
    covers = []
    for oid, mine in by_observation.items():
        for w in current_works(mine):
            if {k.removeprefix("w:") for k in index_keys(w)} & wanted:
                covers.append(Cover(w.work_id, watch.id, oid))
    return covers


def event_covers(e: StoredEvent, paper_watches: Sequence[str], by_key: Sequence[str]) -> list[Cover]:
    """What a citation or resolution makes the watches cover: its paper's watches (by its stream)
    and the works watches its cited work's keys find, each the work_id of the work it cites."""
    if e.type != CITATION and e.type != RESOLUTION:
        return []
    refs = REFS.decode(e.data)
    w = refs.cited_work
    if w is None or w.work_id is None:
        return []
    return [Cover(w.work_id, watch_id, refs.observation_id) for watch_id in [*paper_watches, *by_key]]


def index_keys(w: CitedWork | KnownWork) -> list[str]:
    """The works index keys of a cited work."""
    return sorted({work_index_key(k) for k in work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)})
