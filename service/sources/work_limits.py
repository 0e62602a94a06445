"""How large one work of a works file may be (resolver-v1.md "Works in"): a limit per field, each a
setting with a default, read by `ledger ingest works` and `ledger serve` alike. A work past one is
skipped and counted, the reason naming the field and the setting, as an item without a DOI is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ledger.model.doi import doi_syntax_error
from ledger.model.works import WorkData


@dataclass(frozen=True)
class WorkLimits:
    """Characters (authors: names) one work may hold per field. The defaults are far above any real
    work's and far below what would make a work costly to index or score."""

    doi: int = 300
    title: int = 2_000
    name: int = 300  # one author's family or given name
    authors: int = 5_000  # the largest collaborations list a few thousand
    container: int = 1_000
    field: int = 100  # volume, issue, pages, type, arXiv id


# (variable, WorkLimits field, meaning); api/settings.py lists them with the server's other variables
ENVIRONMENT: tuple[tuple[str, str, str], ...] = (
    ("LEDGER_WORK_MAX_DOI", "doi", "characters in a work's DOI (works files)"),
    ("LEDGER_WORK_MAX_TITLE", "title", "characters in a work's title (works files)"),
    ("LEDGER_WORK_MAX_NAME", "name", "characters in an author's family or given name (works files)"),
    ("LEDGER_WORK_MAX_AUTHORS", "authors", "authors of one work (works files)"),
    ("LEDGER_WORK_MAX_CONTAINER", "container", "characters in a work's container title (works files)"),
    ("LEDGER_WORK_MAX_FIELD", "field", "characters in a work's volume, issue, pages, type, arXiv id"),
)
_VARIABLE = {attr: name for name, attr, _ in ENVIRONMENT}


def from_env(env: Mapping[str, str]) -> WorkLimits:
    """The limits the LEDGER_WORK_MAX_* variables set; ValueError naming a variable that is not a
    positive integer."""
    given: dict[str, int] = {}
    for name, attr, _ in ENVIRONMENT:
        text = env.get(name, "").strip()
        if not text:
            continue
        if not text.isascii() or not text.isdigit() or int(text) < 1:
            unit = "authors" if attr == "authors" else "characters"
            raise ValueError(f"{name} must be a positive integer ({unit}), got {text[:40]!r}")
        given[attr] = int(text)
    return WorkLimits(**given)


class Refusal(Exception):
    """Why one work is not taken: `reason` the kind (a skip's key), `detail` this work's figures."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _cap(value: str | None, limit: int, field_name: str, attr: str, kind: str | None = None) -> None:
    if value is not None and len(value) > limit:
        raise Refusal(
            f"{kind or field_name} longer than {_VARIABLE[attr]}",
            f"{field_name} is {len(value)} characters; at most {limit}",
        )


def check_doi(doi: str, limits: WorkLimits) -> None:
    """Refusal when a normalised DOI is longer than the limit or not a DOI's syntax."""
    _cap(doi, limits.doi, "doi", "doi")
    wrong = doi_syntax_error(doi)
    if wrong is not None:
        raise Refusal("doi not a DOI", f"doi {doi[:60]!r} {wrong}")


def check_work(w: WorkData, limits: WorkLimits) -> None:
    """Refusal naming the first field of `w` past its limit, or its DOI's syntax."""
    check_doi(w.doi, limits)
    _cap(w.title, limits.title, "title", "title")
    if len(w.authors) > limits.authors:
        raise Refusal(
            f"authors more than {_VARIABLE['authors']}",
            f"authors lists {len(w.authors)}; at most {limits.authors}",
        )
    for i, a in enumerate(w.authors):
        _cap(a.family, limits.name, f"authors[{i}].family", "name", "authors[].family")
        _cap(a.given, limits.name, f"authors[{i}].given", "name", "authors[].given")
    _cap(w.container_title, limits.container, "container_title", "container")
    for name in ("volume", "issue", "pages", "type", "arxiv_id"):
        _cap(getattr(w, name), limits.field, name, "field")
