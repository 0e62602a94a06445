"""Server-side HTML rendering of Paper Citation Records, paper pages and errors.

Pure functions: a record (the typed Record of ``record-v1.md``) in, an HTML string
out. No I/O besides loading the Jinja2 templates next to this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from api.records.reading import all_notes
from api.records.timeline import GROUP_LABELS, Rendered
from ledger.model.codec import canonical
from ledger.model.events import STATUSES, CitedWork
from ledger.model.facts import ScrubPass
from ledger.model.jsonvalue import JsonIn
from ledger.model.record_types import Record, SnapshotBlock, StandingNotice, StateCounts
from projections.diff import Changes
from projections.readings import Sides
from service.alerts.paper_notices import work_name
from service.search import Answer, Hit

if TYPE_CHECKING:
    from api.records.integrity import IntegrityAnswer

__all__ = [
    "render_record_page",
    "render_paper_page",
    "render_error_page",
    "render_index_page",
    "render_search_page",
    "render_changes_page",
    "render_integrity_page",
]

# Display order of the reference-resolution states (``pending`` only when present).
STATUS_ORDER = (*STATUSES, "pending")

STANDING_REASONS = {
    "canonical_work_link_unavailable": "Unavailable: canonical work link unavailable.",
    "not_yet_queried": "Not yet queried: no named source has checked this work yet.",
}


def _words(value: JsonIn) -> str:
    """Underscored identifiers as words: ``verified_fuzzy`` -> ``verified fuzzy``."""
    return str(value).replace("_", " ")


def _safe_href(url: JsonIn) -> str | None:
    """The URL if it is safe to put in an href (http(s) or a site path), else None."""
    if not isinstance(url, str):
        return None
    low = url.strip().lower()
    if low.startswith(("http://", "https://")) or (url.startswith("/") and not url.startswith("//")):
        return url
    return None


def _title_of(block: CitedWork | SnapshotBlock | JsonIn) -> str | None:
    """The non-blank ``title`` of a cited_work/paper block (or a paper snapshot's dict), else None."""
    if isinstance(block, dict):
        title = block.get("title")
    elif isinstance(block, (CitedWork, SnapshotBlock)):
        title = block.title
    else:
        return None
    if isinstance(title, str) and title.strip():
        return title.strip()
    return None


def _sentence(text: str) -> str:
    """Text ending as a sentence: ``.`` appended unless it ends in ``.``, ``?`` or ``!``."""
    return text if text.endswith((".", "?", "!")) else text + "."


def _id_from_link(link: JsonIn) -> str:
    """The arXiv id at the end of a ``/paper/{id}`` link."""
    return str(link or "").rstrip("/").rsplit("/", 1)[-1]


# the raw cited work's fields a reader can use, in the order shown (its title is shown above them)
WORK_FIELDS = (
    ("doi", "DOI"),
    ("arxiv_id", "arXiv"),
    ("pith_arxiv_id", "Pith id"),
    ("venue", "venue"),
    ("year", "year"),
    ("metadata_source", "metadata source"),
    ("work_id", "work id"),
    ("snapshot_observed_at", "observed"),
)


def _work_fields(work: CitedWork | None) -> list[tuple[str, str, str | None]]:
    """(label, value, href or None) of each field a cited_work holds, null and blank ones left out."""
    if work is None:
        return []
    out = []
    for key, label in WORK_FIELDS:
        value = getattr(work, key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        href = f"https://doi.org/{value}" if key == "doi" else None
        out.append((label, str(value), href))
    return out


def _state_rows(counts: StateCounts | None) -> list[tuple[str, int]]:
    """(status, count) rows: the six statuses in fixed order, then pending if any."""
    if counts is None:
        return []
    return [(s, counts.get(s)) for s in STATUS_ORDER if s != "pending" or counts.pending]


def _standing_text(notice: StandingNotice) -> str:
    """The one-line standing notice for an unavailable state."""
    reason = notice.reason
    if reason in STANDING_REASONS:
        return STANDING_REASONS[reason]
    return f"Unavailable: {_words(reason or 'no reason given')}."


def _instant(ts: JsonIn) -> datetime | None:
    """A timestamp string as an aware datetime, None if unreadable."""
    try:
        parsed = datetime.fromisoformat(str(ts))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent.parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters.update(
    {
        f.__name__.removeprefix("_"): f
        for f in (_words, _safe_href, _title_of, _sentence, _id_from_link, _standing_text, _work_fields)
    }
)


def render_record_page(
    record: Record,
    *,
    head: str | None = None,
    timeline: Rendered | None = None,
    alerts: tuple[list, list[str]] | None = None,
    broken: ScrubPass | None = None,
    sides: dict[str, Sides] | None = None,
) -> str:
    """Render a Paper Citation Record (record-v1) as a standalone HTML page, with the paper's
    timeline at the top when one is given; `alerts` are the notices in force for the works it cites and
    the sources that had checked (service.alerts.paper_notices.paper_alerts); `broken`, the last full
    walk of the chain when it found a break, is said above everything; `sides`, each reference's latest
    resolution from a source and from the ledger (projections.readings), for the notes beside each
    reference."""
    return ENV.get_template("record.html").render(
        record=record,
        paper=record.paper,
        links=record.links,
        state_rows=_state_rows(record.reference_resolution.state_counts),
        head=head,
        tl=timeline,
        arxiv_id=record.paper.arxiv_id,
        group_labels=list(GROUP_LABELS.items()),
        alerts=None if alerts is None else alerts[0],
        sources_checked=None if alerts is None else alerts[1],
        broken=broken,
        notes=all_notes(record, sides),
    )


def render_paper_page(
    arxiv_id: str,
    snapshots: list[dict],
    links: dict,
    *,
    timeline: Rendered | None = None,
    record: Record | None = None,
    as_of: str | None = None,
    broken: ScrubPass | None = None,
) -> str:
    """Render a paper's snapshots over time (oldest first) with links to its record views; with a
    timeline, the timeline and a summary of the record as of its instant (`as_of`, None before the
    paper's first snapshot); `broken` as for the record page."""

    def key(item: tuple[int, dict]) -> tuple:
        index, snap = item
        at = _instant(snap.get("observed_at"))
        return (at is None, at or datetime.min, snap.get("seq") or 0, index)

    ordered = [snap for _, snap in sorted(enumerate(snapshots), key=key)]
    latest = ordered[-1] if ordered else None
    base = f"/paper/{arxiv_id}"
    all_links = {
        "paper": base,
        "html": f"{base}/citation-record",
        "json": f"{base}/citation-record.json",
        "integrity": f"{base}/integrity",
        "evidence": "/evidence",
        **(links or {}),
    }
    return ENV.get_template("paper.html").render(
        arxiv_id=arxiv_id,
        title=_title_of(latest) or f"arXiv:{arxiv_id}",
        snapshots=ordered,
        links=all_links,
        tl=timeline,
        record=record,
        as_of=as_of,
        state_rows=_state_rows(None if record is None else record.reference_resolution.state_counts),
        notices=_notice_count(record),
        group_labels=list(GROUP_LABELS.items()),
        broken=broken,
    )


def _notice_count(record: Record | None) -> int:
    """How many source-reported events the record's outbound observations list."""
    if record is None:
        return 0
    return sum(len(o.standing_notice.events) for o in record.outbound)


def render_error_page(
    status: int, message: str, links: list[tuple[str, str]] | None = None, *, fix: str | None = None
) -> str:
    """Render an error page for an HTTP status code and a human-readable message, with what to
    `fix` (if said) and optional (label, href) links to where the reader can go instead."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    return ENV.get_template("error.html").render(
        status=status, phrase=phrase, message=message, links=links or [], fix=fix
    )


def render_index_page(
    papers: list[dict],
    *,
    head: str,
    page: int = 1,
    per_page: int = 100,
    more: bool = False,
    broken: ScrubPass | None = None,
) -> str:
    """Render a page of the papers (each {arxiv_id, title}) with links to their records, a search box,
    and links to the pages before and after (`more`: there is a next one); `broken` as for a record."""
    return ENV.get_template("index.html").render(
        papers=papers, head=head, page=page, first=(page - 1) * per_page, more=more, q="", broken=broken
    )


def render_search_page(
    answer: Answer, hits: list[tuple[Hit, str]], per_page: int, broken: ScrubPass | None = None
) -> str:
    """Render a page of search hits (each with the href of its record), the search box holding the query,
    and links to the other pages (`answer`: a service.search.Answer); `broken` as for a record."""
    return ENV.get_template("search.html").render(
        answer=answer, hits=hits, per_page=per_page, q=answer.q, broken=broken
    )


def _change_text(change: Mapping[str, JsonIn]) -> str:
    """One change of a record-changes document in words: what moved, from what to what."""
    kind = change.get("kind")
    if "notice" in change:
        notice = change["notice"]
        notice = notice if isinstance(notice, Mapping) else {}  # null: a notice with nothing said
        what = "appeared" if kind == "notice_appeared" else "went away"
        return f"{_words(notice.get('kind') or 'notice')} notice from {notice.get('source')} {what}"
    if kind in ("receipt_appeared", "receipt_gone", "receipt_moved"):
        return f"{change.get('source')} checked: {_shown(change.get('from'))} → {_shown(change.get('to'))}"
    where = change.get("path") or _words(kind or "")
    return f"{where}: {_shown(change.get('from'))} → {_shown(change.get('to'))}"


def _shown(value: JsonIn) -> str:
    """A JSON value as a reader sees it: none for null, strings as they are, the rest as JSON."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return canonical(value).decode()


ENV.filters.update({"change_text": _change_text, "shown": _shown, "work_name": work_name})


def render_changes_page(
    changes: Changes, *, head: str, links: dict[str, str], broken: ScrubPass | None = None
) -> str:
    """Render what changed in a record between two instants (projections.diff's document), each change
    with the events responsible linked to their inclusion proofs; `links`: record, from_record, integrity;
    `broken` as for a record."""
    return ENV.get_template("changes.html").render(d=changes, head=head, links=links, broken=broken)


def render_integrity_page(
    report: IntegrityAnswer, *, links: dict[str, str], broken: ScrubPass | None = None
) -> str:
    """Render an integrity report (api.records.integrity) for people: the verdict, what was checked and
    how, each event's checks, its inclusion proof and the signed checkpoint a click away; `broken` as
    for a record."""
    proofs = {p["seq"]: p for p in report["proofs"]}
    return ENV.get_template("integrity.html").render(r=report, proofs=proofs, links=links, broken=broken)
