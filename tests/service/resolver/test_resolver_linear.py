"""Every pattern the resolver runs on reference text takes time linear in the text: each is found by
walking the modules (so a new one is covered the day it is added) and fed hostile strings of growing
length, and the time at 4N must stay within 8x the time at N, measured in this run (linear: about 4x;
quadratic: 16x; cubic: 64x). No absolute time is asserted."""

from __future__ import annotations

import gc
import importlib
import pkgutil
import re
import time
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

import ledger.model.doi
import service.resolver
from service.resolver import identifiers, normalise, parse
from service.resolver.match import max_text

N = 256  # the smaller length; the larger is 4N
GROWTH = 8.0  # time at 4N over time at N, at most
MIN_CLOCK = 0.001  # each measurement repeats the call until it takes this long, so timer noise is small


def _modules() -> Iterator[ModuleType]:
    """The resolver's modules, and those it calls on reference text."""
    for info in pkgutil.iter_modules(service.resolver.__path__):
        yield importlib.import_module(f"service.resolver.{info.name}")
    yield ledger.model.doi


def patterns() -> list[tuple[str, re.Pattern[str]]]:
    """Every compiled pattern a module of the resolver holds, once each."""
    seen: dict[int, tuple[str, re.Pattern[str]]] = {}
    for mod in _modules():
        for name, value in vars(mod).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                seen.setdefault(id(value), (f"{mod.__name__}.{name}", value))
    return sorted(seen.values(), key=lambda p: p[0])


def _words(p: re.Pattern[str]) -> list[str]:
    """Literal words a pattern looks for ("doi", "arxiv", "accessed"): what makes it start to work."""
    source = re.sub(r"\\[A-Za-z]", " ", p.pattern)  # not the letters of \b, \s, \d
    return sorted(set(re.findall(r"[a-z]{2,}", source)), key=lambda w: (-len(w), w))[:8]


# what a run is made of: spaces, digits, `|`, letters, punctuation, alternations, broken lines, a DOI's head
UNITS = [" ", "1", "|", "a", "O", "-", "1 ", "a-", " \n", "10.1234/", "(", "[a"]
HEADS = ["", "1", "10.1234/"]


def shapes(p: re.Pattern[str]) -> Iterator[tuple[str, Callable[[int], str]]]:
    """Hostile strings for `p`, as functions of a length: a head (a digit, a DOI's head, or one of the
    words it looks for), then a unit repeated, then characters that make a match fail at the end."""
    words = _words(p)
    heads = list(dict.fromkeys(HEADS + [w + " " for w in words[:3]]))
    units = list(dict.fromkeys(UNITS + [w + "-" for w in words[:3]]))
    for head in heads:
        for unit in units:
            yield f"{head!r}+{unit!r}*n+'x!'", _repeated(head, unit)


def _repeated(head: str, unit: str) -> Callable[[int], str]:
    return lambda n: head + unit * n + "x!"


def _clock(fn: Callable[[], object], calls: int, repeat: int) -> float:
    """The least CPU time, over `repeat` tries, that `calls` calls of `fn` take (CPU time: a process
    waiting for a core is not charged for the wait)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, time.process_time() - t)
    return best


def growth(fn: Callable[[str], object], make: Callable[[int], str], n: int = N) -> float:
    """Time at 4n over time at n. The calls at n are repeated until they take MIN_CLOCK, the same
    number at 4n; a ratio over GROWTH is measured again, more carefully, and the least ratio kept (a
    busy machine slows one measurement, never a whole series)."""
    small, large = make(n), make(4 * n)
    calls = 1
    was = gc.isenabled()
    gc.disable()  # a collection landing in one measurement and not the other is noise
    try:
        while _clock(lambda: fn(small), calls, 1) < MIN_CLOCK:
            calls *= 4
        ratio = _clock(lambda: fn(large), calls, 1) / _clock(lambda: fn(small), calls, 1)
        for _ in range(3):
            if ratio <= GROWTH:
                break
            ratio = min(ratio, _clock(lambda: fn(large), calls, 5) / _clock(lambda: fn(small), calls, 5))
    finally:
        if was:
            gc.enable()
    return ratio


def _scan(p: re.Pattern[str]) -> Callable[[str], object]:
    # every match, from every place a match may start: what .sub, .split, .findall and .search all do
    return lambda text: sum(1 for _ in p.finditer(text))


PATTERNS = patterns()


def test_the_patterns_are_found() -> None:
    names = {n for n, _ in PATTERNS}
    # one of each module's: the walk reaches every module the resolver reads text with
    assert {"service.resolver.parse._VOL_PAGE", "service.resolver.identifiers._DOI_PREFIX",
            "service.resolver.normalise._BROKEN", "service.resolver.score._NOTICE_IN",
            "service.resolver.sbmv._RANGE", "ledger.model.doi._VERSION"} <= names  # fmt: skip


@pytest.mark.parametrize(("name", "pattern"), PATTERNS, ids=[n for n, _ in PATTERNS])
def test_every_pattern_is_linear_on_hostile_text(name: str, pattern: re.Pattern[str]) -> None:
    worst = max((growth(_scan(pattern), make), shape) for shape, make in shapes(pattern))
    assert worst[0] <= GROWTH, f"{name} on {worst[1]}: {worst[0]:.1f}x the time at 4x the length"


# the functions the patterns serve, whole: a linear pattern called once per match is not enough
READERS: list[tuple[str, Callable[[str], object]]] = [
    ("parse", parse.parse),
    ("identifiers.find", identifiers.find),
    ("identifiers.from_fields", lambda t: identifiers.from_fields(t, [t])),
    ("normalise.fold", normalise.fold),
    ("normalise.ocr_digits", normalise.ocr_digits),
]
READER_SHAPES = [
    ("1 + spaces + x", lambda n: "1" + " " * n + "x"),
    ("bars", lambda n: "|" * n),
    ("pp. digits -8", lambda n: "pp. " + "7" * n + "-8"),
    ("digits spaces", lambda n: "1 " * n),
    ("doi: glued", lambda n: "doi:10.1234/a" * n),
    ("DOI heads", lambda n: "10.1234/" * n),
    ("DOI broken lines", lambda n: "10.1234/a-\n" * n),
    ("arxiv glued", lambda n: "arxiv-" * n),
    ("arxiv spaces", lambda n: "arxiv" + " " * n + "x"),
    ("brackets", lambda n: "10.1234/a" + ")" * n),
    ("volume pages", lambda n: "12 (3), 45; " * n),
    ("hyphens", lambda n: "a- " * n),
    ("OCR letters", lambda n: " O" + "lO" * n + "x"),
    ("accessed", lambda n: "accessed on" + " " * n),
]


@pytest.mark.parametrize(("name", "fn"), READERS, ids=[n for n, _ in READERS])
@pytest.mark.parametrize(("shape", "make"), READER_SHAPES, ids=[s for s, _ in READER_SHAPES])
def test_the_readers_are_linear_on_hostile_text(
    name: str, fn: Callable[[str], object], shape: str, make: Callable[[int], str]
) -> None:
    # at a quarter of the cap and at the cap: the longest text the parser reads
    n = max(1, max_text() // 4 // max(1, len(make(1))))
    ratio = growth(fn, make, n)
    assert ratio <= GROWTH, f"{name} on {shape}: {ratio:.1f}x the time at 4x the length"
