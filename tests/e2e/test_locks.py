"""locks/run.txt and locks/dev.txt (what scripts/setup.sh installs with --require-hashes) agree with
pyproject.toml: each dependency pinned inside its range with its files' hashes, nothing pinned that
nothing needs, the tests' imports all in the dev lock. scripts/lock.sh rewrites them."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from dataclasses import dataclass, field

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
# the root of uv's "# via" annotations: the project's own requirements
ROOT_VIA = f"{PROJECT['name']} (pyproject.toml)"
# what each lock must hold besides the dependencies (scripts/lock.sh's --extra flags)
EXTRAS = {"run": ["postgresql", "replicate"], "dev": ["dev", "postgresql", "replicate"]}
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")

# with the install checks of scripts/: the full suite holds them, the fast one leaves them out
pytestmark = pytest.mark.process


@dataclass
class Pin:
    """One entry of a lock: the requirement line, its hashes and what needs it."""

    requirement: Requirement
    hashes: list[str]
    via: list[str] = field(default_factory=list)

    @property
    def version(self) -> str:
        (spec,) = self.requirement.specifier
        return spec.version


def _parse(text: str) -> dict[str, Pin]:
    """A uv/pip-tools lock: name -> Pin (backslash-continued entries, then their "# via" comments)."""
    pins: dict[str, Pin] = {}
    last: Pin | None = None
    in_via = False
    for line in text.replace("\\\n", " ").splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            comment = stripped.lstrip("#").strip()
            if last is not None and line.startswith(" ") and comment.startswith("via"):
                in_via = True
                if comment != "via":
                    last.via.append(comment.removeprefix("via").strip())
            elif last is not None and in_via and line.startswith(" ") and comment:
                last.via.append(comment)
            continue
        in_via = False
        head = stripped.split(" --hash=")[0]
        requirement = Requirement(head)
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{name} is pinned twice"
        last = pins[name] = Pin(requirement, HASH.findall(stripped))
    return pins


LOCKS = {mode: _parse((ROOT / "locks" / f"{mode}.txt").read_text(encoding="utf-8")) for mode in EXTRAS}


def _roots(mode: str) -> list[Requirement]:
    """The requirements pyproject.toml gives the lock of this mode."""
    lines = list(PROJECT["dependencies"])
    for extra in EXTRAS[mode]:
        lines += PROJECT["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


def _extras_needs(requirement: Requirement) -> list[Requirement]:
    """What a requirement's extras (psycopg[binary]) add, from the installed package's metadata."""
    if not requirement.extras:
        return []
    try:
        requires = importlib.metadata.requires(requirement.name) or []
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{requirement.name} is not installed here: its extras cannot be read")
    needs = []
    for line in requires:
        need = Requirement(line)
        if need.marker is None:
            continue
        for extra in requirement.extras:
            if need.marker.evaluate({"extra": extra}) and not need.marker.evaluate({"extra": ""}):
                needs.append(need)
    return needs


@pytest.mark.parametrize("mode", EXTRAS)
def test_every_pin_is_one_version_with_hashes(mode: str):
    for name, pin in LOCKS[mode].items():
        specs = list(pin.requirement.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"{mode}: {name} is not pinned: {specs}"
        assert pin.hashes, f"{mode}: {name}=={pin.version} has no --hash"
        assert not pin.requirement.url, f"{mode}: {name} comes from a URL, not PyPI"


@pytest.mark.parametrize("mode", EXTRAS)
def test_each_dependency_is_pinned_inside_its_range(mode: str):
    lock = LOCKS[mode]
    for root in _roots(mode):
        for requirement in [root, *_extras_needs(root)]:
            name = canonicalize_name(requirement.name)
            assert name in lock, f"locks/{mode}.txt lacks {requirement} (run scripts/lock.sh)"
            version = lock[name].version
            assert requirement.specifier.contains(version, prereleases=True), (
                f"locks/{mode}.txt pins {name}=={version}, outside {requirement} (run scripts/lock.sh)"
            )


@pytest.mark.parametrize("mode", EXTRAS)
def test_nothing_is_pinned_that_nothing_needs(mode: str):
    lock = LOCKS[mode]
    needed_by = {
        name: {canonicalize_name(v) if v != ROOT_VIA else ROOT_VIA for v in pin.via if not v.startswith("-")}
        for name, pin in lock.items()
    }
    reached = {ROOT_VIA}
    while True:
        more = {name for name, parents in needed_by.items() if name not in reached and parents & reached}
        if not more:
            break
        reached |= more
    stale = sorted(set(lock) - reached)
    assert not stale, f"locks/{mode}.txt pins what no dependency needs: {stale} (run scripts/lock.sh)"


def test_the_run_lock_installs_what_the_dev_lock_does():
    dev = LOCKS["dev"]
    for name, pin in LOCKS["run"].items():
        assert name in dev, f"{name} is in locks/run.txt, not in locks/dev.txt"
        assert (pin.version, pin.hashes) == (dev[name].version, dev[name].hashes), name


# import lines (at any indent: some imports are deferred) and pytest.importorskip calls
IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)[\w.]*[ \t]+import\b|import[ \t]+([A-Za-z_]\w*)[^\n]*$)"
    r"|importorskip\(\s*[\"']([A-Za-z_]\w*)",
    re.MULTILINE,
)


def _imported_modules() -> set[str]:
    """The top-level modules the test suite imports (tests/ and the reliability/ modules they load)."""
    names: set[str] = set()
    for path in [*ROOT.glob("tests/**/*.py"), *ROOT.glob("reliability/**/*.py")]:
        for match in IMPORT.finditer(path.read_text(encoding="utf-8")):
            line = match.group(0)
            if match.group(2) and "," in line:  # import a, b
                names |= {
                    part.strip().split(".")[0].split()[0] for part in line.split("import", 1)[1].split(",")
                }
            else:
                names.add(next(group for group in match.groups() if group))
    return names


def test_every_package_the_tests_import_is_in_the_dev_lock():
    # the checkout's own folders and the tests' helper modules (api_fixtures, pg_harness)
    ours = {p.name for p in ROOT.iterdir() if p.is_dir()} | {p.stem for p in ROOT.glob("tests/**/*.py")}
    distributions = importlib.metadata.packages_distributions()
    third_party = sorted(_imported_modules() - ours - set(sys.stdlib_module_names) - {"__future__"})
    assert {"pytest", "psycopg", "playwright", "schemathesis"} <= set(third_party)
    for module in third_party:
        assert module in distributions, f"the tests import {module}, which nothing installed provides"
        names = {canonicalize_name(d) for d in distributions[module]}
        assert names & set(LOCKS["dev"]), f"the tests import {module} ({names}): not in locks/dev.txt"
