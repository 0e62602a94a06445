"""scripts/setup.sh (what scripts/run.sh and scripts/test.sh run first) installs the pinned packages of a
lock, then the project, only when pyproject.toml or a lock changed since the last install, here with a
stand-in for the venv's Python that logs what it is asked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import ROOT

FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../calls"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder laid out as the repository for setup.sh, with a .venv whose python only logs."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "locks", tmp_path / "locks")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("ledger", "#!/bin/sh\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return tmp_path


def _setup(checkout: Path, *args: str) -> list[str]:
    """Run setup.sh; the pip installs it asked for so far."""
    subprocess.run(["bash", str(checkout / "scripts" / "setup.sh"), *args], check=True, cwd=checkout)
    calls = checkout / ".venv" / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


PIP = "-m pip install -q --disable-pip-version-check"
PLAIN = [f"{PIP} --require-hashes -r locks/run.txt", f"{PIP} --no-deps -e ."]
DEV = [f"{PIP} --require-hashes -r locks/dev.txt", f"{PIP} --no-deps -e ."]


@pytest.mark.parametrize("changed", ["pyproject.toml", "locks/run.txt", "locks/dev.txt"])
def test_it_installs_once_then_only_when_pyproject_or_a_lock_changes(checkout: Path, changed: str):
    assert _setup(checkout) == PLAIN
    assert _setup(checkout) == PLAIN  # nothing changed: no second install
    with (checkout / changed).open("a") as f:
        f.write("\n# a new pin\n")
    assert _setup(checkout) == PLAIN + PLAIN
    assert _setup(checkout) == PLAIN + PLAIN


def test_a_dev_install_serves_a_plain_one_but_not_the_reverse(checkout: Path):
    assert _setup(checkout) == PLAIN
    assert _setup(checkout, "dev") == PLAIN + DEV
    assert _setup(checkout) == PLAIN + DEV
    assert _setup(checkout, "dev") == PLAIN + DEV


def test_a_venv_without_the_ledger_script_is_installed_again(checkout: Path):
    _setup(checkout)
    (checkout / ".venv" / "bin" / "ledger").unlink()
    assert len(_setup(checkout)) == 2 * len(PLAIN)


def test_an_unknown_mode_is_refused(checkout: Path):
    run = subprocess.run(
        ["bash", str(checkout / "scripts" / "setup.sh"), "prod"], capture_output=True, text=True
    )
    assert run.returncode == 2 and "usage: scripts/setup.sh [run|dev]" in run.stderr
    assert not (checkout / ".venv" / "calls").exists()


# scripts/system-deps.sh (in scripts/test.sh's full run): Chromium from apt-get, else a clear failure.
FAKE_APT = """#!/bin/sh
echo "apt-get $*" >> "${0%/*}/calls"
exit ${APT_EXIT:-0}
"""


def _system_deps(tmp_path: Path, uid: int, apt: bool, **env: str) -> subprocess.CompletedProcess[str]:
    """Run system-deps.sh with a PATH of bash and stand-ins only: no chromium, `id -u` saying uid."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    fakes = {"id": f"#!/bin/sh\necho {uid}\n", **({"apt-get": FAKE_APT} if apt else {})}
    for name, text in fakes.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    # PostgreSQL's side is the same path through the script; left out so the machine's own does not matter
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "system-deps.sh")],
        env={"PATH": str(bin_dir), "LEDGER_TEST_SKIP_POSTGRESQL": "1", **env},
        capture_output=True,
        text=True,
    )


def _apt_calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "bin" / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_system_deps_installs_a_missing_chromium_with_apt_get_and_says_so(tmp_path: Path):
    run = _system_deps(tmp_path, uid=0, apt=True)
    assert run.returncode == 0, run.stderr
    assert "apt-get install -y chromium" in run.stderr
    assert _apt_calls(tmp_path) == ["apt-get update -qq", "apt-get install -y -qq chromium"]


@pytest.mark.parametrize(
    ("uid", "apt", "env", "why"),
    [
        (1000, True, {}, "only root can apt-get them"),
        (0, False, {}, "this machine has no apt-get"),
        (0, True, {"APT_EXIT": "100"}, "apt-get update failed"),
    ],
)
def test_system_deps_fails_naming_what_it_cannot_install(
    tmp_path: Path, uid: int, apt: bool, env: dict[str, str], why: str
):
    run = _system_deps(tmp_path, uid=uid, apt=apt, **env)
    assert run.returncode == 1
    assert f"error: the tests need chromium (Debian packages), and {why}." in run.stderr
    assert "sudo apt-get install -y chromium" in run.stderr
    assert "LEDGER_TEST_SKIP_BROWSER=1" in run.stderr


def test_system_deps_does_without_chromium_when_told_to(tmp_path: Path):
    run = _system_deps(tmp_path, uid=1000, apt=False, LEDGER_TEST_SKIP_BROWSER="1")
    assert (run.returncode, run.stderr, _apt_calls(tmp_path)) == (0, "", [])
