"""A small catalogue with the near-duplicates the matcher must tell apart, shared by its tests."""

from __future__ import annotations

from ledger.model.works import CatalogueWork
from tests.service.resolver.catalogue_fake import work


def _preprint(seq: int, title: str, authors: str, arxiv_id: str, year: int) -> CatalogueWork:
    """An arXiv paper of the ledger as the catalogue holds it: no DOI, no container, no type."""
    return work(seq, title, authors.split(), arxiv_id=arxiv_id, source="arxiv", year=year, type=None)


def _published(
    seq: int,
    title: str,
    authors: str,
    container: str,
    year: int,
    volume: str | None,
    issue: str | None,
    first_page: str,
    doi: str | None = None,
    type: str = "journal-article",
) -> CatalogueWork:
    """A Crossref work; its DOI is made from seq unless given."""
    return work(
        seq,
        title,
        authors.split(),
        doi=doi,
        container=container,
        year=year,
        volume=volume,
        issue=issue,
        first_page=first_page,
        type=type,
    )


_NEURIPS = "Advances in Neural Information Processing Systems"
_CVPR = "2016 IEEE Conference on Computer Vision and Pattern Recognition (CVPR)"
_JFM = "Journal of Fluid Mechanics"
_JACS = "Journal of the American Chemical Society"
_SEDIMENT = "A theory of sediment transport in braided rivers. "
_GRAPH = "Message passing graph networks for molecular property prediction"
_BERT = "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"
_PROC = "proceedings-article"
_VASWANI = "Vaswani Shazeer Parmar Uszkoreit"

# Arguments: seq, title, authors, then a preprint's arXiv id and year, or a published work's container,
# year, volume, issue and first page.
ATTENTION_PREPRINT = _preprint(10, "Attention Is All You Need", _VASWANI, "1706.03762", 2017)
ATTENTION = _published(
    11, "Attention is all you need", _VASWANI, _NEURIPS, 2017, "30", None, "5998", type=_PROC
)
RESNET = _published(
    12,
    "Deep Residual Learning for Image Recognition",
    "He Zhang Ren Sun",
    _CVPR,
    2016,
    None,
    None,
    "770",
    "10.1109/cvpr.2016.90",
    _PROC,
)
PART_I = _published(
    13, _SEDIMENT + "Part I: Grain sorting", "Okafor Lindqvist", _JFM, 2012, "700", None, "101"
)
PART_II = _published(
    14, _SEDIMENT + "Part II: Bar migration", "Okafor Lindqvist", _JFM, 2012, "700", None, "131"
)
GRAPH = _published(15, _GRAPH, "Nakamura Osei Brandt", "Nature Communications", 2021, "12", "1", "4512")
GRAPH_CORRECTION = _published(
    16, "Correction to: " + _GRAPH, "Nakamura Osei Brandt", "Nature Communications", 2021, "12", "1", "6120"
)
WIDGETS = _published(
    17, "Cooperative catalysis of widget formation", "Smith Doe", _JACS, 2019, "141", None, "1234"
)
WIDGETS_OTHER = _published(
    18, "Widget formation under pressure", "Smith Doe", _JACS, 2019, "141", None, "2345"
)
BERT = _preprint(19, _BERT, "Devlin Chang Lee Toutanova", "1810.04805", 2018)
GPT3 = _published(
    20,
    "Language Models are Few-Shot Learners",
    "Brown Mann Ryder Subbiah Kaplan",
    _NEURIPS,
    2020,
    "33",
    None,
    "1877",
)
ZERO_OFFLOAD = _published(
    21,
    "ZeRO-Offload: Democratizing Billion-Scale Model Training",
    "Ren Rajbhandari Aminabadi",
    "2021 USENIX Annual Technical Conference",
    2021,
    None,
    None,
    "551",
    "10.5555/zero-offload",
)
CATALOGUE = [
    ATTENTION_PREPRINT,
    ATTENTION,
    RESNET,
    PART_I,
    PART_II,
    GRAPH,
    GRAPH_CORRECTION,
    WIDGETS,
    WIDGETS_OTHER,
    BERT,
    GPT3,
    ZERO_OFFLOAD,
]
