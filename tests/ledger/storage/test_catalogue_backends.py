"""The two backends give the resolver the same candidates (resolver-v1.md: the same resolutions on
SQLite and PostgreSQL): the same works by key and by (volume, first page), and with a generous limit
the same works by search, since both look for the same words of each text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ledger.model import events as ev
from ledger.model.works import Author, WorkData
from service.ledger import Ledger
from tests.factories import paper, ts
from tests.pg_harness import PgCluster

_WORDS = [f"w{n}{c}" for n in range(300) for c in "ab"]


def _works(n: int) -> list[ev.Event]:
    rng = random.Random(11)
    out: list[ev.Event] = []
    for i in range(n):
        title = " ".join(rng.choices(_WORDS, [1 / (r + 1) for r in range(len(_WORDS))], k=rng.randint(3, 8)))
        data = WorkData(
            f"10.9/{i}",
            "crossref",
            title,
            [Author(f"name{rng.randrange(40)}", "A.")],
            f"journal {rng.randrange(5)}",
            2000 + rng.randrange(20),
            str(rng.randrange(10)),
            None,
            f"{rng.randrange(30)}-99",
            "journal-article",
            None,
        )
        out.append(ev.WorkObserved(observed_at=ts(1 + i % 3), data=data))
    out += [paper(f"2101.{i:05d}", ts(1), title=" ".join(rng.sample(_WORDS[:50], 4))) for i in range(20)]
    return out


@pytest.mark.process  # a PostgreSQL server beside SQLite
def test_both_backends_answer_the_same_candidates(tmp_path: Path, pg_cluster: PgCluster) -> None:
    events = _works(400)
    ledgers = [Ledger(tmp_path / "a.db"), Ledger(pg_cluster.create_db())]
    for ledger in ledgers:
        ledger.append(events)
    rng = random.Random(5)
    texts = [" ".join(rng.sample(_WORDS, 6)) + f" name{rng.randrange(40)}" for _ in range(40)]
    keys = [f"10.9/{i}" for i in range(0, 400, 7)] + ["10.48550/arxiv.2101.00003", "10.9/none"]
    pairs = [(str(v), str(p)) for v in range(10) for p in range(0, 30, 3)]
    answers = []
    for ledger in ledgers:
        cat = ledger.catalogue
        answers.append(
            (
                [
                    sorted(w.doi or w.arxiv_id or "" for w in found)
                    for found in cat.catalogue_search(texts, 1000)
                ],
                cat.catalogue_by_keys(keys),
                cat.catalogue_by_volume_page(pairs, 1000),
            )
        )
        ledger.close()
    lite, pg = answers
    assert lite[0] == pg[0]
    assert any(lite[0])
    assert lite[1] == pg[1]
    assert lite[2] == pg[2]
