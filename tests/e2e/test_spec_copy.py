"""docs/spec/ is the project's copy of its contract: the same text as the authoritative
../shared/spec/, with a header line and links that work inside the repository."""

from __future__ import annotations

import sys

import pytest

from tests.paths import ROOT

COPY = ROOT / "docs" / "spec"
# shared/spec beside the checkout, or beside a folder holding it (a git worktree sits one level lower)
AUTHORITATIVE = next(
    (d / "shared" / "spec" for d in ROOT.parents if (d / "shared" / "spec").is_dir()),
    ROOT.parent / "shared" / "spec",
)
PAGES = ["record-v1.md", "ledger-v1.md", "http-api.md", "sources-v1.md", "resolver-v1.md"]
# the spec's paths are relative to its own folder; in the repository the same files are in tests/data
LINKS = {
    "`../fixtures/2506.06472.citation-record.txt`": (
        "[`tests/data/2506.06472.citation-record.txt`](../../tests/data/2506.06472.citation-record.txt)"
    ),
    "`../fixtures/`": "[`tests/data/`](../../tests/data/)",
}


def header(name: str) -> str:
    """The one line that says what the copy is and where the authoritative text lives."""
    return (
        f"> This is citation-ledger's contract. The authoritative copy is `shared/spec/{name}` beside the "
        "repository; `tests/e2e/test_spec_copy.py` keeps this one equal to it."
    )


def copy_of(text: str, name: str) -> str:
    """The docs/spec page for the authoritative text of `name`."""
    title, _, rest = text.partition("\n")
    for old, new in LINKS.items():
        rest = rest.replace(old, new)
    return f"{title}\n\n{header(name)}\n{rest}"


@pytest.mark.sqlite_only("compares text files; no ledger")
@pytest.mark.parametrize("name", PAGES)
def test_the_copy_is_the_contract(name: str) -> None:
    if not AUTHORITATIVE.is_dir():
        pytest.skip(f"no {AUTHORITATIVE} here (a clone has only the copy in docs/spec)")
    want = copy_of((AUTHORITATIVE / name).read_text(encoding="utf-8"), name)
    assert (COPY / name).read_text(encoding="utf-8") == want, (
        f"docs/spec/{name} differs: run python -m tests.e2e.test_spec_copy"
    )


@pytest.mark.sqlite_only("reads text files; no ledger")
def test_every_page_is_copied_and_its_links_resolve() -> None:
    """The copies exist in any checkout, and every relative link in them names a file of the repo."""
    import re

    for name in PAGES:
        text = (COPY / name).read_text(encoding="utf-8")
        assert header(name) in text
        assert "../fixtures" not in text
        for target in re.findall(r"\]\(([^)#:]+)\)", text):
            assert (COPY / target).exists(), f"docs/spec/{name} links to {target}, which is not in the repo"


if __name__ == "__main__":
    # refresh the copies after the authoritative spec changed: python -m tests.e2e.test_spec_copy
    for name in PAGES:
        (COPY / name).write_text(
            copy_of((AUTHORITATIVE / name).read_text(encoding="utf-8"), name), encoding="utf-8"
        )
        print(f"docs/spec/{name}", file=sys.stderr)
