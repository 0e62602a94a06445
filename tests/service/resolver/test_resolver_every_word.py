"""What one work can cost a search (ledger/storage/derived/catalogue.py): the title index holds at most
TITLE_WORDS of a work's title, NAMES of its authors (NAME_WORDS each) and CONTAINER_WORDS of its
container, so works whose titles hold every word of the catalogue enter no more searches than any
other work, and the resolver's answers over a real-shaped slice stay what they were. Both backends."""

from __future__ import annotations

import io
import json
import re

from ledger.model.resolving import RefInput
from ledger.storage.catalogue_store import SqlCatalogue
from ledger.storage.derived.catalogue import CONTAINER_WORDS, NAME_WORDS, NAMES, TITLE_WORDS
from service.ledger import Ledger
from service.resolver.match import resolve_many
from service.sources import SourceFile
from service.sources.work_limits import WorkLimits
from service.sources.works import NAME, ingest_works
from tests.eval_slice import AT, ref_inputs, tune_references, works_slice
from tests.service.test_works_limits import ndjson

EVERY_WORD = 25
_WORD = re.compile(r"[^\W_]+")


def _vocabulary(works: bytes) -> list[str]:
    words: set[str] = set()
    for line in works.decode().splitlines():
        w = json.loads(line)
        for text in [*w.get("title", []), *w.get("container-title", [])]:
            words.update(_WORD.findall(text.lower()))
        for a in w.get("author", []):
            words.update(_WORD.findall(f"{a.get('family', '')} {a.get('given', '')}".lower()))
    return sorted(words)


def _answers(ledger: Ledger, refs: list[RefInput]) -> list[tuple[str | None, str]]:
    return [(d.work.doi if d.work else None, d.status) for d in resolve_many(refs, ledger.catalogue)]


def test_works_holding_every_word_do_not_cut_verified_matches(fresh_ledger: Ledger) -> None:
    works, dois = works_slice(1500)
    ingest_works(fresh_ledger, SourceFile(NAME, io.BytesIO(works), AT))
    refs = ref_inputs(tune_references(dois, 240))
    before = _answers(fresh_ledger, refs)
    assert sum(doi is not None for doi, _ in before) > 120  # the slice resolves: the test can fail
    vocabulary = _vocabulary(works)
    hostile = [
        {
            "DOI": f"10.5555/every-word.{i}",
            "title": [" ".join(vocabulary[i:] + vocabulary[:i])],
            "author": [{"family": w} for w in vocabulary[i * 40 : i * 40 + 40]],
            "container-title": [" ".join(reversed(vocabulary))],
        }
        for i in range(EVERY_WORD)
    ]
    # the title cap would refuse them whole: raised, so that what is tested is what the index holds
    big = WorkLimits(title=10**7, container=10**7)
    s = ingest_works(fresh_ledger, SourceFile(NAME, ndjson(*hostile), "2026-09-02T00:00:00Z"), limits=big)
    assert s.appended == EVERY_WORD
    # the same work answered for every reference (a status may change as the words' counts move
    # which candidates a search meets: a preprint met beside its journal version makes no exact match)
    after = _answers(fresh_ledger, refs)
    assert [doi for doi, _ in after] == [doi for doi, _ in before]


def test_a_work_indexes_a_bounded_number_of_words(fresh_ledger: Ledger) -> None:
    title = " ".join(f"t{i}" for i in range(1000))
    authors = [{"family": " ".join(f"f{i}x{j}" for j in range(10))} for i in range(100)]
    item = {
        "DOI": "10.5555/long",
        "title": [title],
        "author": authors,
        "container-title": [title.replace("t", "c")],
    }
    ingest_works(
        fresh_ledger, SourceFile(NAME, ndjson(item), AT), limits=WorkLimits(title=10**6, container=10**6)
    )
    fresh_ledger.catalogue  # noqa: B018
    catalogue = fresh_ledger.store.catalogue
    assert isinstance(catalogue, SqlCatalogue)
    (row,) = catalogue.catalogue_rows()
    words = row.search_text.split()
    assert len(words) == TITLE_WORDS + NAMES * NAME_WORDS + CONTAINER_WORDS
    assert (
        words[:2] == ["t0", "t1"] and words[TITLE_WORDS] == "f0x0" and words[-1] == f"c{CONTAINER_WORDS - 1}"
    )
    # the words past the cut find nothing; those before it find the work
    assert catalogue.catalogue_search([f"t{TITLE_WORDS + 5} t900"], 5) == [[]]
    assert [w.doi for w in catalogue.catalogue_search(["t3 t7"], 5)[0]] == ["10.5555/long"]
    assert catalogue.catalogue_check() is None
