"""The shape rules behind the record page's notes (api/records/reading.py): what reads as an author
list, a venue, an address, a year taken for a reference number; and what does not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.records.reading import (
    looks_like_address,
    looks_like_authors,
    looks_like_venue,
    looks_like_year,
    method_words,
)


@pytest.mark.parametrize(
    "text",
    [
        "Brown, Benjamin Mann, Nick Ryder, Melanie Subbiah, Jared Kaplan, et al",
        "Le, Yonghui Wu, and Zhifeng Chen",
        "Mustafa Rafique, Franck Cappello, and Bogdan Nico- lae",
        "A. Smith and B. C. Jones",
    ],
)
def test_author_lists(text: str) -> None:
    assert looks_like_authors(text)


@pytest.mark.parametrize(
    "text",
    [
        "Attention Is All You Need",
        "Cats, Dogs, and Mice",
        "Pride and Prejudice",
        "Llama 2: Open Foundation and Fine-Tuned Chat Models",
        "Representation, Computation, and Management",
        "Scaling laws for neural language models",
    ],
)
def test_titles_are_not_author_lists(text: str) -> None:
    assert not looks_like_authors(text)


@pytest.mark.parametrize(
    ("text", "venue"),
    [
        ("In Proceedings of the 25th International Middleware Conference", True),
        ("In19th USENIX Conference on File and Storage Technologies (FAST 21), pages 387–401, 2021", True),
        ("Advances in neural information processing systems 33 (2020), 1877–1901", True),
        ("Language models are unsupervised multitask learners.OpenAI blog, 1(8):9, 2019", True),
        ("Gpipe: Efficient training.Advances in neural information processing systems, 32, 2019", True),
        ("Advances in Deep Learning for Vision", False),
        ("The Llama 3 Herd of Models", False),
        ("Information Retrieval in the Age of Search", False),
    ],
)
def test_venues(text: str, venue: bool) -> None:
    assert looks_like_venue(text) is venue


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("arXiv:2307.09288", True),
        ("Exxact.https://www.exxactcorp.com/, 2025", True),
        ("nvidia.com/blog/gpudirect-storage/", True),
        ("GPT-4 Technical Report", False),
        ("Node.js at scale", False),
    ],
)
def test_addresses(text: str, address: bool) -> None:
    assert looks_like_address(text) is address


@given(st.integers(min_value=-10, max_value=5000), st.integers(min_value=0, max_value=3000))
def test_a_year_is_a_number_in_the_years_above_the_count(index: int, count: int) -> None:
    assert looks_like_year(index, count) is (1800 <= index <= 2100 and index > count)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (None, "no method named"),
        ("person:ada", "a person, ada"),
        ("citation-ledger/sbmv+guards/2", "this ledger's resolver (method sbmv+guards, version 2)"),
        ("raw_fallback", "the source's method raw_fallback"),
    ],
)
def test_method_words(source: str | None, words: str) -> None:
    assert method_words(source) == words
