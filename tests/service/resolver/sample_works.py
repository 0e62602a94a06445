"""A small catalogue with the near-duplicates the matcher must tell apart, shared by its tests."""

from __future__ import annotations

from tests.service.resolver.catalogue_fake import work

ATTENTION_PREPRINT = work(
    10,
    "Attention Is All You Need",
    ["Vaswani", "Shazeer", "Parmar", "Uszkoreit"],
    arxiv_id="1706.03762",
    doi=None,
    source="arxiv",
    year=2017,
    type=None,
)
ATTENTION = work(
    11,
    "Attention is all you need",
    ["Vaswani", "Shazeer", "Parmar", "Uszkoreit"],
    container="Advances in Neural Information Processing Systems",
    year=2017,
    volume="30",
    first_page="5998",
    type="proceedings-article",
)
RESNET = work(
    12,
    "Deep Residual Learning for Image Recognition",
    ["He", "Zhang", "Ren", "Sun"],
    doi="10.1109/cvpr.2016.90",
    container="2016 IEEE Conference on Computer Vision and Pattern Recognition (CVPR)",
    year=2016,
    first_page="770",
    type="proceedings-article",
)
PART_I = work(
    13,
    "A theory of sediment transport in braided rivers. Part I: Grain sorting",
    ["Okafor", "Lindqvist"],
    container="Journal of Fluid Mechanics",
    year=2012,
    volume="700",
    first_page="101",
)
PART_II = work(
    14,
    "A theory of sediment transport in braided rivers. Part II: Bar migration",
    ["Okafor", "Lindqvist"],
    container="Journal of Fluid Mechanics",
    year=2012,
    volume="700",
    first_page="131",
)
GRAPH = work(
    15,
    "Message passing graph networks for molecular property prediction",
    ["Nakamura", "Osei", "Brandt"],
    container="Nature Communications",
    year=2021,
    volume="12",
    issue="1",
    first_page="4512",
)
GRAPH_CORRECTION = work(
    16,
    "Correction to: Message passing graph networks for molecular property prediction",
    ["Nakamura", "Osei", "Brandt"],
    container="Nature Communications",
    year=2021,
    volume="12",
    issue="1",
    first_page="6120",
)
WIDGETS = work(
    17,
    "Cooperative catalysis of widget formation",
    ["Smith", "Doe"],
    container="Journal of the American Chemical Society",
    year=2019,
    volume="141",
    first_page="1234",
)
WIDGETS_OTHER = work(
    18,
    "Widget formation under pressure",
    ["Smith", "Doe"],
    container="Journal of the American Chemical Society",
    year=2019,
    volume="141",
    first_page="2345",
)
BERT = work(
    19,
    "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    ["Devlin", "Chang", "Lee", "Toutanova"],
    arxiv_id="1810.04805",
    doi=None,
    source="arxiv",
    year=2018,
    type=None,
)
GPT3 = work(
    20,
    "Language Models are Few-Shot Learners",
    ["Brown", "Mann", "Ryder", "Subbiah", "Kaplan"],
    container="Advances in Neural Information Processing Systems",
    year=2020,
    volume="33",
    first_page="1877",
)
ZERO_OFFLOAD = work(
    21,
    "ZeRO-Offload: Democratizing Billion-Scale Model Training",
    ["Ren", "Rajbhandari", "Aminabadi"],
    doi="10.5555/zero-offload",
    container="2021 USENIX Annual Technical Conference",
    year=2021,
    first_page="551",
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
