"""`ledger search WORDS...`: papers and references found by the words of their titles."""

from __future__ import annotations

import click

from cli.common import read_db_option


def register(main: click.Group) -> None:
    """Add `ledger search` to the `ledger` group (once)."""
    if "search" not in main.commands:
        main.add_command(search_command)


@click.command("search")
@click.argument("words", nargs=-1, required=True)
@click.option("--page", default=1, show_default=True, type=click.IntRange(1), help="Which page of hits.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer of GET /search as canonical JSON.")
@read_db_option
def search_command(words: tuple[str, ...], page: int, as_json: bool, db: str) -> None:
    """Titles of papers and references holding every one of WORDS (each matches the start of a word),
    papers first; each hit with the path of the record page that shows it. Indexes the events appended
    since the last search first. WORDS that are one arXiv id as pasted (bare, arXiv:, a version, an abs
    URL, a DOI) name that paper: it alone, or `error: ... not in this ledger`, exit 1."""
    from ledger.model.codec import canonical
    from service.ledger import Ledger
    from service.search import record_href, search

    answer = search(Ledger(db), " ".join(words), page, where="WORDS")
    if as_json:
        click.echo(canonical(answer.to_dict()).decode())
        return
    if answer.arxiv_id is not None:
        click.echo(f"arXiv:{answer.arxiv_id} is in this ledger")
    else:
        says = "title holds" if answer.total == 1 else "titles hold"
        shown = f", page {answer.page} of {answer.pages}" if answer.pages > 1 else ""
        click.echo(f"{answer.total} {says} {' '.join(answer.words)}{shown}")
    for hit in answer.hits:
        if hit.kind == "paper":
            click.echo(f"paper arXiv:{hit.arxiv_id}: {hit.title}")
        else:
            ref = "?" if hit.reference_index is None else hit.reference_index
            click.echo(f"reference {ref} of arXiv:{hit.arxiv_id}: {hit.title}")
        click.echo(f"  {record_href(hit)}")
