"""The resolver's value types (resolver-v1.md): a work as its catalogue holds it, a reference as its
source gave it, and the evidence a resolution carries.

They sit on the ground floor because events carry them (`work.observed`, the optional `reference` of a
citation, the optional `evidence` of a resolution) and storage returns catalogue works as candidates.
"""

from __future__ import annotations

from typing import NamedTuple

from msgspec import UNSET, Struct, UnsetType


class Author(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """One author of a catalogued work, in the order the source lists them."""

    family: str | None
    given: str | None


class WorkData(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """The data of a `work.observed` event: one work as a catalogue source published it."""

    doi: str  # normalised (ledger/model/doi.py normalize_doi)
    source: str  # "crossref" or "openalex"
    title: str | None
    authors: list[Author]
    container_title: str | None
    year: int | None
    volume: str | None
    issue: str | None
    pages: str | None  # as published, e.g. "123-130" or "e1002"
    type: str | None
    arxiv_id: str | None


# Crossref's reference object spells some keys with hyphens; Python names them with underscores
_REFERENCE_NAMES = {
    "article_title": "article-title",
    "volume_title": "volume-title",
    "series_title": "series-title",
    "journal_title": "journal-title",
    "first_page": "first-page",
    "standard_designator": "standard-designator",
    "standards_body": "standards-body",
    "doi_asserted_by": "doi-asserted-by",
    "issn_type": "issn-type",
    "isbn_type": "isbn-type",
}


class Reference(
    Struct, frozen=True, forbid_unknown_fields=True, gc=False, rename=_REFERENCE_NAMES, omit_defaults=True
):
    """A reference as its source gave it, in the shape of a Crossref reference object: every key
    optional, every value a string; an absent key is left out when encoded, never null."""

    unstructured: str | UnsetType = UNSET
    author: str | UnsetType = UNSET
    year: str | UnsetType = UNSET
    article_title: str | UnsetType = UNSET
    volume_title: str | UnsetType = UNSET
    series_title: str | UnsetType = UNSET
    journal_title: str | UnsetType = UNSET
    volume: str | UnsetType = UNSET
    issue: str | UnsetType = UNSET
    first_page: str | UnsetType = UNSET
    edition: str | UnsetType = UNSET
    component: str | UnsetType = UNSET
    standard_designator: str | UnsetType = UNSET
    standards_body: str | UnsetType = UNSET
    ISSN: str | UnsetType = UNSET
    ISBN: str | UnsetType = UNSET
    DOI: str | UnsetType = UNSET
    doi_asserted_by: str | UnsetType = UNSET
    key: str | UnsetType = UNSET
    issn_type: str | UnsetType = UNSET  # "print" or "electronic": which ISSN the reference gives
    isbn_type: str | UnsetType = UNSET


class RunnerUp(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """The best candidate after the one chosen (or after the best, when none was chosen)."""

    catalogue_seq: int
    doi: str | None
    arxiv_id: str | None
    score: int


class Evidence(Struct, frozen=True, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """Why the resolver answered as it did: not part of the record's JSON. Its optional keys are left
    out when not given (never null), so the evidence written before them keeps its bytes."""

    method: str  # e.g. "identifier", "title-author-year", "search-validate"
    catalogue_seq: int | None  # the seq of the catalogue event matched; None when nothing matched
    score: int
    agreed: list[str]  # the fields of the reference found in the work: "title", "year", ...
    disagreed: list[str]
    runner_up: RunnerUp | None
    # why the resolver could not read the reference (an exception in resolving it): the answer is then
    # `unresolved`, and the reference is not examined again by the same version of the resolver
    error: str | UnsetType = UNSET


class CatalogueWork(NamedTuple):
    """One work of the catalogue as of an instant, as storage hands it to the resolver: the latest
    `work.observed` of a DOI, or the latest `paper.observed` of an arXiv paper."""

    seq: int  # the catalogue event's seq
    observed_at: str
    source: str  # "crossref", "openalex", or "arxiv" for a paper the ledger holds
    type: str | None  # the source's kind of work: "journal-article", "posted-content", ...
    doi: str | None
    arxiv_id: str | None
    title: str | None
    authors: tuple[str, ...]  # family names (or a full name when the source gives no family), in order
    container: str | None
    year: int | None
    volume: str | None
    issue: str | None
    first_page: str | None
    # the seq of the first catalogue event of its DOI or paper: which of two works was held first
    # (None where a reader does not know it: then its seq)
    first_seq: int | None = None
