"""Make the resolver's synthetic works catalogue: Crossref-shaped NDJSON, deterministic from a seed.

Writes data/catalogue.ndjson (the works the ledger ingests), data/held_out.ndjson (works whose references
are rendered but which the catalogue lacks) and data/works_meta.jsonl.gz (per DOI: split, held out, the kind
of near-duplicate it has in the catalogue, its group). Run: python -m bench.resolver.make_catalogue.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

from bench.resolver import vocab

DATA = Path(__file__).parent / "data"
KINDS = ("preprint-journal", "part", "correction", "same-authors-venue-year", "one-word-title")


@dataclass
class Work:
    """One synthetic work, before it is written as a Crossref item."""

    doi: str
    title: str
    authors: list[tuple[str, str]]
    field: str
    type: str
    year: int
    month: int
    container: str | None = None
    short_container: str | None = None
    volume: str | None = None
    issue: str | None = None
    page: str | None = None
    article_number: bool = False
    subtitle: str | None = None
    subtitle_apart: bool = False  # in Crossref's `subtitle` rather than after a colon in the title
    arxiv_id: str | None = None
    preprint_of: str | None = None  # journal DOI this posted-content is the preprint of
    has_preprint: str | None = None  # arXiv id of this work's preprint
    update_to: str | None = None  # DOI a correction notice corrects
    group: int = 0
    kind: str | None = None  # the near-duplicate kind of its group
    held_out: bool = False
    split: str = "test"
    partners: list[str] = dc_field(default_factory=list)


class Maker:
    """Draws works from the vocabulary with one random generator, so a seed decides everything."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.dois: set[str] = set()
        self.titles: set[str] = set()
        self.arxiv: set[str] = set()
        self.people = self._people(9000)
        self.group = 0

    def _people(self, n: int) -> dict[str, list[tuple[str, str]]]:
        r = self.r
        out: dict[str, list[tuple[str, str]]] = {f: [] for f in vocab.FIELDS}
        for _ in range(n):
            f = r.choice(list(vocab.FIELDS))
            given = r.choice(vocab.GIVEN)
            if r.random() < 0.15:
                given = f"{given} {r.choice(string.ascii_uppercase)}."
            family = r.choice(vocab.FAMILY)
            if r.random() < 0.03:
                family = f"{family}-{r.choice(vocab.FAMILY).split()[-1]}"
            out[f].append((family, given))
        return out

    # titles

    def _phrase(self, f: str, slot: str) -> str:
        return self.r.choice(vocab.FIELDS[f][slot])

    def _fill(self, template: str, f: str) -> str:
        words = {k: self._phrase(f, k) for k in ("method", "object", "setting", "adj")}
        words["object2"] = self._phrase(f, "object")
        out = template
        for k, v in words.items():
            out = out.replace("{" + k + "}", v).replace("{" + k.capitalize() + "}", v[:1].upper() + v[1:])
        return re.sub(r"\b([Aa]) (?=[aeioAEIO]|[uU](?!ni|se|su))", r"\1n ", out)

    def title(self, f: str) -> tuple[str, str | None]:
        """A new title (and maybe a subtitle) not used before."""
        r = self.r
        for _ in range(200):
            if r.random() < 0.07:
                t = self._fill(r.choice(vocab.SHORT_TITLES), f)
            else:
                t = self._fill(r.choice(vocab.TEMPLATES), f)
            sub = None
            if ":" not in t and r.random() < 0.3:
                sub = self._fill(r.choice(vocab.SUBTITLES), f)
            if r.random() < 0.08:  # long titles: two clauses joined
                more = self._fill(r.choice(vocab.TEMPLATES), f)
                t = f"{t} and {more[:1].lower()}{more[1:]}"
            if r.random() < 0.2:
                t = title_case(t)
                sub = title_case(sub) if sub else None
            key = norm(t + (sub or ""))
            if key not in self.titles:
                self.titles.add(key)
                return t, sub
        raise RuntimeError("vocabulary exhausted")

    def authors(self, f: str) -> list[tuple[str, str]]:
        r = self.r
        spread = {
            "physics": 3.5,
            "biology": 4.5,
            "medicine": 5.0,
            "ml": 3.0,
            "chemistry": 3.0,
            "economics": 1.2,
        }
        n = min(12, 1 + int(r.expovariate(1 / spread[f])))
        pool = self.people[f]
        picked = r.sample(pool, n)
        if r.random() < 0.1:  # initials only, as some publishers deposit them
            picked = [(fam, initials(g)) for fam, g in picked]
        return picked

    # identifiers

    def arxiv_id(self, year: int, f: str) -> str:
        r = self.r
        while True:
            if year >= 2007:
                yymm = f"{year % 100:02d}{r.randint(1, 12):02d}"
                num = r.randint(1, 29999) if year >= 2015 else r.randint(1, 9999)
                aid = f"{yymm}.{num:05d}" if year >= 2015 else f"{yymm}.{num:04d}"
            else:
                cat = {"physics": "cond-mat", "ml": "cs", "biology": "q-bio", "economics": "q-fin"}.get(
                    f, "physics"
                )
                aid = f"{cat}/{year % 100:02d}{r.randint(1, 12):02d}{r.randint(1, 999):03d}"
            if aid not in self.arxiv:
                self.arxiv.add(aid)
                return aid

    def doi(self, w: Work) -> str:
        r = self.r
        prefix = r.choice(vocab.PREFIX[w.field])
        abbr = re.sub(r"[^a-z]", "", (w.short_container or "x").lower())[:8] or "x"
        for attempt in range(100):
            n = r.randint(1, 99999)
            if prefix == "10.1103":
                page = w.page.split("-")[0] if w.page and attempt == 0 else n
                suffix = f"PhysRev{abbr[-1].upper()}.{w.volume}.{page}"
            elif prefix == "10.1016":
                suffix = f"j.{abbr}.{w.year}.{r.randint(1, 12):02d}.{r.randint(1, 999):03d}"
            elif prefix == "10.1021":
                suffix = f"{abbr}.{w.year % 100}{r.choice('abcdefg')}{n:05d}"
            elif prefix == "10.1038":
                suffix = f"s{r.randint(41467, 41598)}-{w.year % 100:02d}{n:05d}-{r.randint(0, 9)}"
            elif prefix == "10.1371":
                suffix = f"journal.p{abbr[4:8] or 'bio'}.{r.randint(1000000, 1999999)}"
            elif prefix == "10.1002":
                suffix = f"anie.{w.year}{n:05d}"
            else:
                suffix = f"{abbr}.{w.year}.{n}"
            d = f"{prefix}/{suffix}"
            if d.lower() not in self.dois:
                self.dois.add(d.lower())
                return d
        raise RuntimeError("DOI space exhausted")

    # works

    def year(self, start: int) -> int:
        lo = max(1950, start)
        while True:
            y = 2026 - int(abs(self.r.gauss(0, 14)))
            if y >= lo:
                return y

    def place(self, w: Work, f: str) -> None:
        """Container, volume, issue and pages of a new work of type w.type."""
        r = self.r
        if w.type == "journal-article":
            full, short, start, _, artno = r.choice([j for j in vocab.JOURNALS if j[3] == f])
            w.year = self.year(start)
            w.container, w.short_container = full, short
            w.volume = str(w.year - start + 1)
            if r.random() < 0.85:
                w.issue = str(r.randint(1, 12 if f != "physics" else 24))
            if artno and r.random() < 0.85:
                w.article_number = True
                if f == "physics":
                    w.page = f"{r.randint(0, 24):02d}{r.randint(1, 9999):04d}"
                elif short.startswith(("PLoS", "eLife")):
                    w.page = f"e{r.randint(1000, 1009999)}"
                else:
                    w.page = str(r.randint(100, 99999))
            else:
                first = r.randint(1, 3500)
                w.page = f"{first}-{first + r.randint(2, 30)}" if r.random() < 0.92 else str(first)
        elif w.type == "proceedings-article":
            choices = [p for p in vocab.PROCEEDINGS if p[3] == f] or [
                p for p in vocab.PROCEEDINGS if p[3] == "ml"
            ]
            full, short, start, _ = r.choice(choices)
            w.year = self.year(start) if not full.startswith("SC20") else 2020
            w.container, w.short_container = full, short
            if full.startswith(("Advances", "AIP", "Journal of Physics")):
                w.volume = str(w.year - start + 1)
            first = r.randint(1, 12000)
            w.page = f"{first}-{first + r.randint(6, 14)}"
        elif w.type == "book-chapter":
            w.year = self.year(1960)
            w.container = r.choice(vocab.BOOKS[f])
            if w.container.startswith(("Lecture", "Methods", "Springer", "Topics", "Current")):
                w.volume = str(r.randint(1, 2500))
            first = r.randint(1, 800)
            w.page = f"{first}-{first + r.randint(10, 60)}"
        else:  # posted-content: an arXiv preprint
            w.year = self.year(1992)
            w.arxiv_id = self.arxiv_id(w.year, f)
        w.month = r.randint(1, 12)

    def new(self, f: str, type_: str | None = None) -> Work:
        """A fresh work of field f."""
        r = self.r
        if type_ is None:
            x = r.random()
            if f in ("ml", "physics") and x < 0.12:
                type_ = "proceedings-article" if f == "ml" or x < 0.04 else "journal-article"
            elif x < 0.17:
                type_ = "book-chapter" if x < 0.16 else "journal-article"
            else:
                type_ = "journal-article"
            if f in ("ml", "physics") and r.random() < 0.08:
                type_ = "posted-content"
        t, sub = self.title(f)
        w = Work(
            doi="",
            title=t,
            subtitle=sub,
            authors=self.authors(f),
            field=f,
            type=type_,
            year=0,
            month=1,
            subtitle_apart=r.random() < 0.25,
        )
        self.place(w, f)
        w.doi = arxiv_doi(w.arxiv_id) if w.arxiv_id else self.doi(w)
        return w

    def clone(self, w: Work, **changes: object) -> Work:
        """A copy of w with a fresh DOI and the changes (a later year moves the volume on)."""
        c = Work(**{**w.__dict__, "partners": [], **changes})  # type: ignore[arg-type]
        c.year = min(c.year, 2026)
        if c.year != w.year and w.volume and w.volume.isdigit() and w.type == "journal-article":
            c.volume = str(int(w.volume) + c.year - w.year)
        if c.arxiv_id and c.type == "posted-content":
            c.doi = arxiv_doi(c.arxiv_id)
        else:
            c.doi = self.doi(c)
        return c

    def group_of(self, kind: str | None) -> list[Work]:
        """One group: a single work, or a work and its near-duplicate of the given kind."""
        r = self.r
        f = r.choices(list(vocab.FIELDS), weights=[30, 18, 14, 16, 14, 8])[0]
        if kind is None:
            return [self.new(f)]
        if kind == "preprint-journal":
            f = r.choice(["ml", "ml", "physics", "biology"])
            j = self.new(f, "journal-article" if f != "ml" or r.random() < 0.5 else "proceedings-article")
            while j.year < 1995:
                j = self.new(f, j.type)
            py = j.year - r.choice([0, 0, 1, 1, 2])
            aid = self.arxiv_id(py, f)
            title, sub = j.title, j.subtitle
            if r.random() < 0.2:  # preprints often lack the journal version's subtitle
                title, sub = title.split(":")[0], None
            authors = list(j.authors)
            if r.random() < 0.1 and len(authors) > 1:
                authors = authors[:-1]
            p = Work(
                doi=arxiv_doi(aid),
                title=title,
                subtitle=sub,
                authors=authors,
                field=f,
                type="posted-content",
                year=py,
                month=r.randint(1, 12),
                arxiv_id=aid,
                preprint_of=j.doi,
            )
            j.has_preprint = aid
            return [j, p]
        if kind == "part":
            a = self.new(f, "journal-article")
            base = a.title.split(":")[0]
            style = r.random()
            subs = [self._fill(r.choice(vocab.SUBTITLES), f), self._fill(r.choice(vocab.SUBTITLES), f)]
            if style < 0.5:
                t1, t2 = f"{base}. Part I: {subs[0]}", f"{base}. Part II: {subs[1]}"
            elif style < 0.8:
                t1, t2 = f"{base}. I. {subs[0].capitalize()}", f"{base}. II. {subs[1].capitalize()}"
            else:
                t1, t2 = f"{base} (Part 1)", f"{base} (Part 2)"
            a.title, a.subtitle = t1, None
            b = self.clone(a, title=t2, year=a.year + r.choice([0, 0, 1]))
            if a.page and "-" in a.page:
                end = int(a.page.split("-")[1])
                b.page = f"{end + 1}-{end + 1 + r.randint(5, 25)}"
            self.titles.update({norm(t1), norm(t2)})
            return [a, b] if r.random() < 0.5 else [b, a]
        if kind == "correction":
            a = self.new(f, "journal-article")
            label = r.choice(
                [
                    "Correction to: ",
                    "Correction: ",
                    "Erratum: ",
                    "Publisher Correction: ",
                    "Author Correction: ",
                ]
            )
            full = a.title + (f": {a.subtitle}" if a.subtitle else "")
            c = self.clone(
                a, title=label + full, subtitle=None, year=a.year + r.choice([0, 0, 1, 2]), update_to=a.doi
            )
            c.page = str(r.randint(1, 3500)) if not a.article_number else c.page
            # the original is what people cite: the notice is its distractor
            return [a, c]
        if kind == "same-authors-venue-year":
            a = self.new(f, "journal-article")
            t, sub = self.title(f)
            b = self.clone(a, title=t, subtitle=sub)
            if r.random() < 0.6 and b.page:
                first = r.randint(1, 3500)
                b.page = (
                    f"{first}-{first + r.randint(2, 30)}"
                    if "-" in b.page
                    else b.page[:-3] + f"{r.randint(0, 999):03d}"
                )
            if r.random() < 0.3 and b.issue:
                b.issue = str(r.randint(1, 12))
            return [a, b] if r.random() < 0.5 else [b, a]
        if kind == "one-word-title":
            a = self.new(f)
            swapped = swap_one_word(a.title, f, r)
            if swapped is None or norm(swapped + (a.subtitle or "")) in self.titles:
                return [a]
            self.titles.add(norm(swapped + (a.subtitle or "")))
            b = self.new(f, a.type if a.type != "posted-content" else "journal-article")
            b.title, b.subtitle = swapped, a.subtitle
            if r.random() < 0.4:  # same first author: a follow-up paper
                b.authors = [a.authors[0], *b.authors[1:]]
            return [a, b] if r.random() < 0.5 else [b, a]
        raise ValueError(kind)


def swap_one_word(title: str, f: str, r: random.Random) -> str | None:
    """The title with one word replaced by a word of the same field (an adjective or a noun)."""
    words = title.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) > 3 and w.isalpha()]
    if not candidates:
        return None
    i = r.choice(candidates)
    pool = [
        x
        for x in " ".join(vocab.FIELDS[f]["adj"] + vocab.FIELDS[f]["object"]).split()
        if x.isalpha() and len(x) > 3
    ]
    repl = r.choice(pool)
    if repl.lower() == words[i].lower():
        return None
    words[i] = repl.capitalize() if words[i][:1].isupper() else repl.lower()
    return " ".join(words)


def arxiv_doi(aid: str) -> str:
    """The DataCite DOI arXiv gives a paper."""
    return f"10.48550/arXiv.{aid}"


def initials(given: str) -> str:
    """'Jan-Willem' -> 'J.-W.', 'María José' -> 'M. J.'."""
    parts = []
    for word in given.split():
        parts.append("-".join(p[0] + "." for p in word.rstrip(".").split("-") if p))
    return " ".join(parts)


def title_case(t: str) -> str:
    small = {"a", "an", "and", "of", "the", "in", "on", "for", "to", "at", "with", "by", "from", "via", "or"}
    out = []
    for i, w in enumerate(t.split(" ")):
        out.append(w if (i and w.lower() in small) or not w[:1].islower() else w[:1].upper() + w[1:])
    return " ".join(out)


def norm(t: str) -> str:
    return re.sub(r"[^a-z0-9]", "", t.lower())


def crossref_item(w: Work) -> dict[str, object]:
    """The work as one item of Crossref's REST answer / public data file."""
    item: dict[str, object] = {
        "DOI": w.doi,
        "type": w.type,
        "title": [w.title if not w.subtitle or w.subtitle_apart else f"{w.title}: {w.subtitle}"],
        "author": [
            {"given": g, "family": fam, "sequence": "first" if i == 0 else "additional", "affiliation": []}
            for i, (fam, g) in enumerate(w.authors)
        ],
        "issued": {"date-parts": [[w.year, w.month]]},
        "published": {"date-parts": [[w.year, w.month]]},
        "prefix": w.doi.split("/")[0],
        "URL": f"https://doi.org/{w.doi}",
    }
    if w.subtitle and w.subtitle_apart:
        item["subtitle"] = [w.subtitle]
    if w.container:
        item["container-title"] = [w.container]
        item["short-container-title"] = [w.short_container] if w.short_container else []
    for k in ("volume", "issue", "page"):
        v = getattr(w, k)
        if v:
            item[k] = v
    if w.article_number and w.page:
        item["article-number"] = w.page
    relation: dict[str, list[dict[str, str]]] = {}
    if w.type == "posted-content":
        item["subtype"] = "preprint"
        item["publisher"] = "arXiv"
        item["institution"] = [{"name": "arXiv"}]
        item["alternative-id"] = [w.arxiv_id]
        if w.preprint_of:
            relation["is-preprint-of"] = [{"id-type": "doi", "id": w.preprint_of, "asserted-by": "subject"}]
    if w.has_preprint:
        relation["has-preprint"] = [
            {"id-type": "arxiv", "id": w.has_preprint, "asserted-by": "subject"},
            {"id-type": "doi", "id": arxiv_doi(w.has_preprint), "asserted-by": "subject"},
        ]
    if relation:
        item["relation"] = relation
    if w.update_to:
        item["update-to"] = [{"DOI": w.update_to, "type": "correction", "label": "Correction"}]
    return item


def build(seed: int, n_catalogue: int, n_held: int) -> list[Work]:
    """Every work, catalogued and held out, each with its split and near-duplicate kind."""
    m = Maker(seed)
    r = m.r
    works: list[Work] = []
    kinds_w = {
        "preprint-journal": 0.05,
        "part": 0.02,
        "correction": 0.025,
        "same-authors-venue-year": 0.03,
        "one-word-title": 0.025,
    }
    total = n_catalogue + n_held
    gid = 0
    held = 0
    groups: list[list[Work]] = []
    while sum(len(g) for g in groups) < total:
        x = r.random()
        kind = None
        acc = 0.0
        for k, p in kinds_w.items():
            acc += p
            if x < acc:
                kind = k
                break
        g = m.group_of(kind)
        gid += 1
        split = "tune" if r.random() < 0.4 else "test"
        real_kind = kind if len(g) > 1 else None
        for w in g:
            w.group, w.kind, w.split = gid, real_kind, split
            w.partners = [o.doi for o in g if o is not w]
        # holding out one member of a pair tests that its distractor is not taken for it
        if real_kind in ("part", "same-authors-venue-year", "one-word-title") and r.random() < 0.3:
            g[0].held_out = True
            held += 1
        elif real_kind == "correction" and r.random() < 0.35:
            g[0].held_out = True  # the original held out, its correction notice catalogued
            held += 1
        elif real_kind == "preprint-journal" and r.random() < 0.15:
            for w in g:
                w.held_out = True
            held += len(g)
        groups.append(g)
    # then single works held out until a fifth of all works are
    singles = [g[0] for g in groups if len(g) == 1]
    r.shuffle(singles)
    need = max(0, n_held - held)
    for w in singles[:need]:
        w.held_out = True
    for g in groups:
        works.extend(g)
    return works


def near_duplicate(w: Work, in_catalogue: set[str]) -> str | None:
    """The kind of near-duplicate w has in the catalogue, if one of its partners is catalogued."""
    return w.kind if any(p in in_catalogue for p in w.partners) else None


def gz_writer(path: Path) -> io.TextIOWrapper:
    """A gzip text writer whose bytes depend only on what is written (no time in the header)."""
    raw = gzip.GzipFile(filename=str(path), mode="wb", mtime=0, compresslevel=9)
    return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")


def gz_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a gzipped NDJSON file, one a line."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--catalogue", type=int, default=16000, help="works in the catalogue (about)")
    ap.add_argument("--held-out", type=int, default=4000, help="works held out (about)")
    ap.add_argument("--out", type=Path, default=DATA)
    a = ap.parse_args(argv)
    works = build(a.seed, a.catalogue, a.held_out)
    a.out.mkdir(parents=True, exist_ok=True)
    in_cat = {w.doi for w in works if not w.held_out}
    with (
        gz_writer(a.out / "catalogue.ndjson.gz") as cat,
        gz_writer(a.out / "held_out.ndjson.gz") as ho,
        gz_writer(a.out / "works_meta.jsonl.gz") as meta,
    ):
        for w in works:
            line = json.dumps(crossref_item(w), ensure_ascii=False, separators=(",", ":"))
            (ho if w.held_out else cat).write(line + "\n")
            meta.write(
                json.dumps(
                    {
                        "doi": w.doi,
                        "split": w.split,
                        "held_out": w.held_out,
                        "field": w.field,
                        "type": w.type,
                        "group": w.group,
                        "kind": w.kind,
                        "near_duplicate": near_duplicate(w, in_cat),
                        "partners": w.partners,
                        "arxiv_id": w.arxiv_id,
                    },
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                + "\n"
            )
    n_held = sum(w.held_out for w in works)
    print(f"{len(works) - n_held} catalogued, {n_held} held out, {len(works)} works -> {a.out}")


if __name__ == "__main__":
    main()
