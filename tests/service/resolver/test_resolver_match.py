"""The matcher's decisions on the cases resolver-v1.md names: identifiers, noisy titles, title-less styles,
near-duplicates, held-out works, lines that name no work."""

from __future__ import annotations

import pytest

from ledger.model.events import CitedWork
from ledger.model.resolving import Decision, RefInput
from ledger.model.works import Reference
from service.resolver.match import METHOD_VERSION, resolve_many
from tests.service.resolver import sample_works as s
from tests.service.resolver.catalogue_fake import FakeCatalogue


def decide_one(
    ref: Reference | None, cited: CitedWork | None = None, catalogue: FakeCatalogue | None = None
) -> Decision:
    """The decision on one input, against the sample catalogue unless another is given."""
    (d,) = resolve_many([RefInput("o1", ref, cited)], catalogue or FakeCatalogue(s.CATALOGUE))
    return d


def decide(text: str, catalogue: FakeCatalogue | None = None) -> Decision:
    return decide_one(Reference(unstructured=text), None, catalogue)


def outcome(d: Decision) -> tuple[str, int | None]:
    return d.status, d.work.seq if d.work else None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # identifiers decide, in any printed form, when the text agrees or says nothing
        ("arXiv:1810.04805", ("verified_exact", s.BERT.seq)),
        ("Devlin et al. BERT. 2018. arXiv:1810.O4805v1", ("verified_exact", s.BERT.seq)),
        (
            "He et al. Deep residual learning. CVPR 2016. https://doi.org/10.1109/CVPR.2016.90.",
            ("verified_exact", 12),
        ),
        ("He et al. Deep residual learning. doi:10.1109/cvpr.\n2016.90", ("verified_exact", s.RESNET.seq)),
        # an identifier naming a known work the text contradicts
        (
            "Someone. Quantum widgets for everyone. Phys. Rev. 1999. doi:10.1109/cvpr.2016.90",
            ("metadata_mismatch", None),
        ),
        ("Someone. Quantum widgets. arXiv:2101.0001", ("malformed_identifier", None)),
        # titles with noise
        (
            "K. He, X. Zhang, S. Ren, and J. Sun, “Deep residual learning for image recognition,” in Proc. "
            "CVPR, 2016, pp. 770–778.",
            ("verified_exact", s.RESNET.seq),
        ),
        # words broken at line ends, once mended, are the title word for word
        (
            "He K, Zhang X, Ren S, Sun J. Deep resid- ual learning for im- age recognition. CVPR 2016",
            ("verified_exact", 12),
        ),
        ("He K, Zhang X. Deepresidual learningfor image recognition. CVPR 2O16: 77O", ("verified_fuzzy", 12)),
        (
            "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
            ("verified_fuzzy", 19),
        ),
        (
            "2021.{Zero-offload}: Democratizing{billion-scale} model training",
            ("verified_fuzzy", s.ZERO_OFFLOAD.seq),
        ),
        # title-less styles: numbers and a name decide, and a neighbour in the same journal and year does not
        ("Smith, J.; Doe, A. J. Am. Chem. Soc. 2019, 141, 1234–1240.", ("verified_fuzzy", s.WIDGETS.seq)),
        ("Smith, J.; Doe, A. J. Am. Chem. Soc. 2019, 141, 3456–3460.", ("unresolved", None)),
        # a preprint and its journal version: a field tells them apart, or neither is chosen
        (
            "Vaswani A, et al. Attention is all you need. NeurIPS 30 (2017), 5998-6008.",
            ("verified_fuzzy", 11),
        ),
        ("Vaswani A, et al. Attention is all you need. arXiv preprint, 2017.", ("verified_fuzzy", 10)),
        ("Vaswani A, et al. Attention is all you need. 2017.", ("unresolved", None)),
        # Part I and Part II, and a part the catalogue lacks
        (
            "Okafor, Lindqvist. A theory of sediment transport in braided rivers. Part II: Bar migration. "
            "J. Fluid Mech. 700, 131 (2012)",
            ("verified_exact", s.PART_II.seq),
        ),
        (
            "Okafor, Lindqvist. A theory of sediment transport in braided rivers. Part III: Bends. 2013",
            ("unresolved", None),
        ),
        ("Okafor, Lindqvist. A theory of sediment transport in braided rivers. 2012", ("unresolved", None)),
        # a correction notice and the work it corrects
        (
            "Nakamura, Osei, Brandt. Correction to: Message passing graph networks for molecular property "
            "prediction. Nat. Commun. 2021",
            ("verified_fuzzy", s.GRAPH_CORRECTION.seq),
        ),
        (
            "Nakamura, Osei, Brandt. Message passing graph networks for molecular property prediction. "
            "Nat. Commun. 12, 4512 (2021)",
            ("verified_exact", s.GRAPH.seq),
        ),
        # lines that name no work
        ("Accessed: 2025-06", ("unresolved", None)),
        ("Brown, Benjamin Mann, Nick Ryder, Melanie Subbiah, Jared Kaplan, et al", ("unresolved", None)),
        ("Mustafa Rafique, Franck Cappello, and Bogdan Nicolae. 2024", ("unresolved", None)),
        ("In Proceedings of the 25th International Middleware Conference", ("unresolved", None)),
        ("", ("unresolved", None)),
        # a work the catalogue lacks
        ("Unicorn Q. Deep learning of unicorns and rainbows. J. Magic 3, 14 (2020)", ("unresolved", None)),
        ("Vaswani A. Attention is not all you need either. 2023", ("unresolved", None)),
    ],
)
def test_decisions(text: str, expected: tuple[str, int | None]) -> None:
    assert outcome(decide(text)) == expected


def test_the_evidence_names_the_candidate_the_fields_and_the_runner_up() -> None:
    d = decide("Vaswani A, et al. Attention is all you need. NeurIPS 30 (2017), 5998-6008.")
    assert d.evidence.method == "search-validate"
    assert d.evidence.catalogue_seq == s.ATTENTION.seq
    assert {"title", "first_author", "year", "volume", "first_page"} <= set(d.evidence.agreed)
    assert d.evidence.runner_up is not None and d.evidence.runner_up.catalogue_seq == s.ATTENTION_PREPRINT.seq
    assert d.evidence.runner_up.score < d.evidence.score
    assert isinstance(d.evidence.score, int)


def test_a_tie_is_refused_and_both_are_named() -> None:
    d = decide("Vaswani A, et al. Attention is all you need. 2017.")
    assert d.evidence.catalogue_seq is None
    assert d.evidence.runner_up is not None


def test_an_identifier_decision_says_so() -> None:
    d = decide("arXiv:1810.04805")
    assert (d.evidence.method, d.evidence.catalogue_seq) == ("identifier", s.BERT.seq)


def test_a_mismatch_names_the_work_its_identifier_names() -> None:
    d = decide("Someone. Quantum widgets for everyone. Phys. Rev. 1999. doi:10.1109/cvpr.2016.90")
    assert (d.status, d.work, d.evidence.catalogue_seq) == ("metadata_mismatch", None, s.RESNET.seq)
    assert "year" in d.evidence.disagreed


def test_a_reference_from_a_record_is_read_from_its_cited_work() -> None:
    cited = CitedWork(
        None,
        None,
        "raw_reference",
        None,
        "2026-08-05T11:38:53Z",
        "Deep residual learning for image recognition",
        "CVPR",
        None,
        2016,
    )
    d = decide_one(None, cited)
    assert outcome(d) == ("verified_fuzzy", s.RESNET.seq)
    cited_id = CitedWork(
        "1810.04805", None, "raw_reference", None, "2026-08-05T11:38:53Z", None, None, None, None
    )
    d = decide_one(None, cited_id)
    assert outcome(d) == ("verified_exact", s.BERT.seq)


def test_structured_fields_are_read() -> None:
    ref = Reference(
        author="He",
        article_title="Deep Residual Learning for Image Recognition",
        year="2016",
        first_page="770",
    )
    d = decide_one(ref)
    assert outcome(d) == ("verified_exact", s.RESNET.seq)


def test_a_structured_journal_reference_is_not_the_preprint() -> None:
    # the journal version is not in the catalogue: its preprint, same title, authors and year, is not it
    ref = Reference(
        author="Vaswani",
        year="2017",
        article_title="Attention is all you need",
        journal_title="Advances in Neural Information Processing Systems",
        volume="30",
        first_page="5998",
    )
    d = decide_one(ref, catalogue=FakeCatalogue([w for w in s.CATALOGUE if w.seq != s.ATTENTION.seq]))
    assert outcome(d) == ("unresolved", None)
    assert "venue" in d.evidence.disagreed


def test_an_arxiv_paper_and_its_arxiv_doi_record_are_one_work() -> None:
    from tests.service.resolver.catalogue_fake import work

    same = work(
        99, s.BERT.title, s.BERT.authors, doi="10.48550/arXiv.1810.04805", year=2018, type="posted-content"
    )
    d = decide(
        "Devlin J, Chang M, Lee K, Toutanova K. BERT: Pre-training of deep bidirectional transformers for "
        "language understanding. arXiv preprint 2018.",
        FakeCatalogue([*s.CATALOGUE, same]),
    )
    assert outcome(d) == ("verified_exact", s.BERT.seq)


def test_one_call_per_batch_and_one_decision_per_input_in_order() -> None:
    cat = FakeCatalogue(s.CATALOGUE)
    texts = [
        "arXiv:1810.04805",
        "Accessed: 2025-06",
        "Smith, J.; Doe, A. J. Am. Chem. Soc. 2019, 141, 1234–1240.",
        "He K. Deep residual learning for image recognition. 2016",
    ] * 5
    ds = resolve_many([RefInput(str(n), Reference(unstructured=t), None) for n, t in enumerate(texts)], cat)
    assert [outcome(d)[1] for d in ds[:4]] == [s.BERT.seq, None, s.WIDGETS.seq, s.RESNET.seq] and len(
        ds
    ) == 20
    assert cat.calls == {"keys": 1, "search": 1, "volume_page": 1}


def test_the_method_has_a_version() -> None:
    assert METHOD_VERSION.count("/") == 1 and METHOD_VERSION.split("/")[1].isdigit()
