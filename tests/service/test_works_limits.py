"""A works file's work within bounds (resolver-v1.md "Works in", service/sources/work_limits.py): a DOI
of the DOI syntax and no longer than its limit, every string of a work and its author count capped by a
setting; a work past one is skipped and counted, the reason naming the field and the setting, the
example the item; and the summary names the DOIs whose title or first author an ingest changed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model.codec import check_rules
from ledger.model.doi import doi_syntax_error
from ledger.model.errors import InvalidEvent
from ledger.model.events import WorkObserved
from ledger.model.works import WorkData
from service.ledger import Ledger
from service.sources import SourceFile
from service.sources.work_limits import ENVIRONMENT, WorkLimits, from_env
from service.sources.works import CHANGED_LISTED, NAME, WorksSummary, ingest_works
from tests.conftest import examples

T = "2026-11-01T00:00:00Z"
T2 = "2026-11-02T00:00:00Z"


def item(doi: str = "10.1000/a", **over: Any) -> dict[str, Any]:
    """A Crossref work item, any field replaced."""
    base: dict[str, Any] = {
        "DOI": doi,
        "title": ["A title of a work"],
        "author": [{"family": "Doe", "given": "Jane"}],
        "container-title": ["Journal"],
        "issued": {"date-parts": [[2020]]},
        "volume": "1",
        "issue": "2",
        "page": "1-2",
        "type": "journal-article",
    }
    base.update(over)
    return base


def ndjson(*items: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(i, ensure_ascii=False) for i in items).encode()


def ingest(ledger: Ledger, body: bytes, at: str = T, limits: WorkLimits | None = None) -> WorksSummary:
    return ingest_works(ledger, SourceFile(NAME, body, at), limits=limits)


HOSTILE_DOIS = [
    ("10.1000/" + "x" * 100_000, "doi longer than LEDGER_WORK_MAX_DOI", "100008 characters; at most 300"),
    ("10.1000/a\u0001b", "doi not a DOI", "U+0001"),
    ("10.1000/a\u202eb", "doi not a DOI", "U+202E"),
    ("10.1000/a\u200bb", "doi not a DOI", "U+200B"),
    ("10.\u0661\u0662\u0663\u0664/abc", "doi not a DOI", "registrant code"),
    ("10.1000/\u0661\u0662", "doi not a DOI", "U+0661"),
    ("10.1000/a b", "doi not a DOI", "U+0020"),
    ("11.1000/abc", "doi not a DOI", "begin with 10."),
    ("10.abc/def", "doi not a DOI", "registrant code"),
    ("10.1000", "doi not a DOI", "no /"),
]


@pytest.mark.parametrize(("doi", "reason", "said"), HOSTILE_DOIS)
def test_a_doi_off_the_syntax_is_skipped_naming_the_field(
    fresh_ledger: Ledger, doi: str, reason: str, said: str
) -> None:
    s = ingest(fresh_ledger, ndjson(item("10.1000/fine"), item(doi)))
    assert (s.read, s.works, s.appended) == (2, 1, 1)
    assert dict(s.skipped) == {reason: 1}
    (example,) = s.examples[reason]
    assert example.startswith("item 2: doi ") and said in example
    assert [e.stream for e in fresh_ledger.store.read_log()] == ["work:10.1000/fine"]


TEN_MB = "t" * (10 * 1024 * 1024)


@pytest.mark.parametrize(
    ("over", "reason", "said"),
    [
        ({"title": [TEN_MB]}, "title longer than LEDGER_WORK_MAX_TITLE", "title is 10485760 characters"),
        (
            {"author": [{"family": "Doe"}, {"family": "f" * 301}]},
            "authors[].family longer than LEDGER_WORK_MAX_NAME",
            "authors[1].family is 301 characters; at most 300",
        ),
        (
            {"author": [{"family": "Doe", "given": "g" * 301}]},
            "authors[].given longer than LEDGER_WORK_MAX_NAME",
            "authors[0].given is 301",
        ),
        (
            {"author": [{"family": f"A{i}"} for i in range(5_001)]},
            "authors more than LEDGER_WORK_MAX_AUTHORS",
            "authors lists 5001; at most 5000",
        ),
        (
            {"container-title": ["c" * 1_001]},
            "container_title longer than LEDGER_WORK_MAX_CONTAINER",
            "at most 1000",
        ),
        ({"volume": "1" * 101}, "volume longer than LEDGER_WORK_MAX_FIELD", "volume is 101"),
        ({"issue": "1" * 101}, "issue longer than LEDGER_WORK_MAX_FIELD", "issue is 101"),
        ({"page": "1" * 101}, "pages longer than LEDGER_WORK_MAX_FIELD", "pages is 101"),
        ({"type": "t" * 101}, "type longer than LEDGER_WORK_MAX_FIELD", "type is 101"),
    ],
)
def test_a_string_past_its_limit_is_skipped_naming_item_field_and_limit(
    fresh_ledger: Ledger, over: dict[str, Any], reason: str, said: str
) -> None:
    s = ingest(fresh_ledger, ndjson(item("10.1000/fine"), item("10.1000/big", **over)))
    assert (s.works, s.appended, dict(s.skipped)) == (1, 1, {reason: 1})
    (example,) = s.examples[reason]
    assert example.startswith("item 2: ") and said in example, example
    assert fresh_ledger.head().seq == 1


def test_the_limits_are_settings(fresh_ledger: Ledger) -> None:
    limits = from_env({"LEDGER_WORK_MAX_TITLE": "20", "LEDGER_WORK_MAX_FIELD": "16"})
    assert (limits.title, limits.field, limits.doi) == (20, 16, WorkLimits().doi)
    s = ingest(
        fresh_ledger,
        ndjson(item("10.1/a", title=["x" * 21]), item("10.1/b", volume="1" * 17), item("10.1/c")),
        limits=limits,
    )
    assert dict(s.skipped) == {
        "title longer than LEDGER_WORK_MAX_TITLE": 1,
        "volume longer than LEDGER_WORK_MAX_FIELD": 1,
    }
    assert s.examples["title longer than LEDGER_WORK_MAX_TITLE"] == [
        "item 1: title is 21 characters; at most 20"
    ]


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", "\u0661"])
@pytest.mark.parametrize("name", [n for n, _, _ in ENVIRONMENT])
def test_a_limit_that_is_not_a_positive_integer_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a positive integer"):
        from_env({name: value})


def test_a_work_observed_posted_as_an_event_is_held_to_the_doi_syntax() -> None:
    data = WorkData("10.1000/a\u202eb", "crossref", "t", [], None, None, None, None, None, None, None)
    with pytest.raises(InvalidEvent, match="U\\+202E") as e:
        check_rules(WorkObserved(observed_at=T, data=data), "events[0]", None)
    assert e.value.where == "events[0].data.doi"


registrant = st.from_regex(r"\A[0-9]{1,6}(\.[0-9]{1,3}){0,2}\Z")
suffix = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)


@given(registrant, suffix)
def test_every_doi_of_the_syntax_is_taken(reg: str, suf: str) -> None:
    assert doi_syntax_error(f"10.{reg}/{suf}") is None


@given(registrant, suffix, st.characters(blacklist_categories=()), st.integers(0, 40))
def test_any_character_outside_printable_ascii_is_refused(reg: str, suf: str, c: str, at: int) -> None:
    doi = f"10.{reg}/{suf}"
    at = min(at, len(doi))
    bad = doi[:at] + c + doi[at:]
    if not "!" <= c <= "~":
        assert doi_syntax_error(bad) is not None


def test_the_summary_names_the_dois_whose_title_or_first_author_changed(fresh_ledger: Ledger) -> None:
    ingest(fresh_ledger, ndjson(item("10.1/a"), item("10.1/b"), item("10.1/c")))
    s = ingest(
        fresh_ledger,
        ndjson(
            item("10.1/a", title=["Another title"]),
            item("10.1/b", author=[{"family": "Roe", "given": "R"}]),
            item("10.1/c", volume="9"),  # changed, but not its title or first author
            item("10.1/d"),  # new
        ),
        at=T2,
    )
    assert (s.appended, s.changed) == (4, 2)
    assert s.changed_listed == [
        {"doi": "10.1/a", "fields": ["title"]},
        {"doi": "10.1/b", "fields": ["first_author"]},
    ]
    assert s.to_dict()["changed"] == {"count": 2, "listed": s.changed_listed}
    assert s.lines()[-1] == (
        "  changed the title or first author of 2 works: 10.1/a (title), 10.1/b (first_author)"
    )
    again = ingest(fresh_ledger, ndjson(item("10.1/a", title=["Another title"])), at=T2)
    assert (again.appended, again.changed, again.to_dict()["changed"]) == (0, 0, {"count": 0, "listed": []})


def test_the_changed_list_is_bounded(fresh_ledger: Ledger) -> None:
    n = CHANGED_LISTED + 5
    ingest(fresh_ledger, ndjson(*(item(f"10.1/{i}") for i in range(n))))
    s = ingest(fresh_ledger, ndjson(*(item(f"10.1/{i}", title=[f"T{i}"]) for i in range(n))), at=T2)
    assert s.changed == n and len(s.changed_listed) == CHANGED_LISTED
    assert s.lines()[-1].endswith(" and 5 more")


KNOWN_SKIPS = {
    "no DOI",
    "doi not a DOI",
    "doi longer than LEDGER_WORK_MAX_DOI",
    "title longer than LEDGER_WORK_MAX_TITLE",
    "authors[].family longer than LEDGER_WORK_MAX_NAME",
    "authors[].given longer than LEDGER_WORK_MAX_NAME",
    "authors more than LEDGER_WORK_MAX_AUTHORS",
    "container_title longer than LEDGER_WORK_MAX_CONTAINER",
    "volume longer than LEDGER_WORK_MAX_FIELD",
    "issue longer than LEDGER_WORK_MAX_FIELD",
    "pages longer than LEDGER_WORK_MAX_FIELD",
    "type longer than LEDGER_WORK_MAX_FIELD",
}
_any_text = st.text(st.characters(codec="utf-8"), max_size=12)
_doi_like = st.builds(
    lambda head, reg, suf: f"{head}{reg}/{suf}",
    st.sampled_from(["10.", "10.", "doi:10.", "https://doi.org/10.", "11.", ""]),
    st.one_of(st.from_regex(r"\A[0-9]{1,5}\Z"), _any_text),
    st.one_of(st.from_regex(r"\A[!-~]{1,12}\Z"), _any_text),
)


@settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    dois=st.lists(_doi_like, min_size=1, max_size=4),
    sizes=st.lists(st.integers(0, 40), min_size=4, max_size=4),
)
def test_any_doi_and_field_sizes_end_in_a_known_skip_or_a_work_of_the_syntax(
    fresh_ledger: Ledger, dois: list[str], sizes: list[int]
) -> None:
    """Fuzz: every item is either appended with a DOI of the syntax, within every limit, or skipped
    under one of the named reasons; never an exception."""
    limits = WorkLimits(doi=30, title=20, name=20, authors=3, container=20, field=20)
    title, names, authors, volume = sizes
    items = [
        item(d, title=["t" * title], author=[{"family": "f" * names}] * (authors % 6), volume="9" * volume)
        for d in dois
    ]
    # one ledger for every example: each looks only at what it appended
    start = fresh_ledger.head().seq
    s = ingest(fresh_ledger, ndjson(*items), limits=limits)
    assert set(s.skipped) <= KNOWN_SKIPS, s.skipped
    assert s.works + sum(s.skipped.values()) == len(items)
    for e in fresh_ledger.store.read_log(after=start):
        doi = e.stream.removeprefix("work:")
        assert doi_syntax_error(doi) is None and len(doi) <= limits.doi
