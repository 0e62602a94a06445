"""The shell sessions of README.md and docs/*.md, run for real against a fresh ledger and compared with
what they print, as sqlite-utils keeps its documentation honest with cog. Any docs/*.md is picked up.

How a session is written (the format this test reads):

- A session is a fenced block whose info string is `console`. Each line starting with `$ ` is a command
  (a command whose quotes or trailing backslash are left open goes on over the next lines); the lines
  after it, up to the next command, are what it prints, stdout and stderr together, in order.
- Each session runs in a new empty folder (the ledger is `./ledger.db`, created on first use) through
  one bash process, as a reader with only the package installed: the record comes from `ledger sample`,
  the source files from `ledger sample --sources DIR`. `ledger` and `python3` are this project's.
- `<!-- file: NAME -->` on the line just before any fenced block of a page: that block's text is the
  file NAME, written into the folder of every session of the page (a receiver a session starts, say).
- An HTML comment on the line just before the block may set it up:
  `<!-- session: sample -->`: the folder's ledger holds the sample record, as `ledger serve` leaves it;
  `<!-- session: synthetic -->`: the folder's `synthetic.db` holds the 5,000-event paper of
  tests/timeline_history.py, as `python -m bench.timeline --db synthetic.db` builds it;
  `<!-- session: postgresql -->`: a new empty database on a throwaway PostgreSQL server
  (tests/pg_harness.py) stands for `postgresql://ledger@127.0.0.1:45275/ledger` wherever the session
  names it, and its key file's name for `127.0.0.1-45275-ledger`;
  `<!-- session: skip: REASON -->`: the session is not run (REASON says why, and which test does the same).
- A command ending in `&` runs in the background with its output kept aside: each line written after
  it must appear in that output, in order, by the time the session ends (a server, or a webhook
  receiver printing what it gets); when it names `--port N` the next command waits until the port
  answers. It is a job, as in a terminal: `kill %1; wait` stops the first one and returns once it has
  ended. Background commands still running are stopped when the session ends.
- A command must exit 0 unless it shows its exit code itself (`cmd; echo "exit $?"`).
- What is compared: every line, with UUIDs, hashes (hex of 8 or more digits), base64 of 20 or more characters,
  RFC 3339 instants and durations (`0.10 s`) masked on both sides, and runs of spaces as one. `…` in a
  written line stands for any text; a line that is only `…` stands for any number of lines.
- Ports 8000-8999 a session or a page's files name are replaced by free ones, the same one for each
  number.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.api_fixtures import free_port
from tests.paths import ROOT
from tests.pg_harness import PgCluster
from tests.waiting import poll, wait_until

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SAMPLE = ROOT / "ledger" / "samples" / "2509.02480.record.json"
_FENCE = re.compile(r"^```console\s*$")
_SETUP = re.compile(r"^<!--\s*session:\s*(\w+)(?::\s*(.*?))?\s*-->\s*$")
_FILE = re.compile(r"^<!--\s*file:\s*([\w.-]+)\s*-->\s*$")
_PORT = re.compile(r"(?<=[:\s=])(8\d{3})\b")
_MASKS = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[Zz]|[+-]\d\d:\d\d)"), "<time>"),
    (re.compile(r"\d{8}T\d{6,}Z"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)? s\b"), "<duration>"),
    (re.compile(r"[0-9a-f]{8,}"), "<hex>"),
    (re.compile(r"[A-Za-z0-9+/]{20,}={0,2}"), "<base64>"),
]
WAIT_S = 30  # liveness only: how long a background server may take to answer


@dataclass
class Step:
    """One command of a session and the lines it should print."""

    command: str
    expected: list[str] = field(default_factory=list)

    @property
    def bare(self) -> str:
        """The command without a comment after it."""
        return re.sub(r"\s#[^'\"\n]*$", "", self.command).rstrip()

    @property
    def background(self) -> bool:
        return self.bare.endswith("&") and not self.bare.endswith("&&")


@dataclass
class Session:
    """One ```console block: where it is, how it is set up, its steps."""

    page: Path
    line: int
    setup: str
    reason: str
    steps: list[Step]
    files: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _complete(command: str) -> bool:
    try:
        shlex.split(command, comments=True)
    except ValueError:
        return False
    return not command.endswith("\\")


def page_files(lines: list[str]) -> dict[str, str]:
    """The fenced blocks a page names as files (`<!-- file: NAME -->` just before), by name."""
    files = {}
    for i, line in enumerate(lines[:-1]):
        name = _FILE.match(line)
        if name and lines[i + 1].startswith("```"):
            end = next(k for k in range(i + 2, len(lines)) if lines[k].strip() == "```")
            files[name[1]] = "\n".join(lines[i + 2 : end]) + "\n"
    return files


def parse(page: Path) -> list[Session]:
    """The console sessions of a page."""
    lines = page.read_text(encoding="utf-8").splitlines()
    files = page_files(lines)
    sessions: list[Session] = []
    i = 0
    while i < len(lines):
        if not _FENCE.match(lines[i]):
            i += 1
            continue
        setup = _SETUP.match(lines[i - 1]) if i else None
        start, i = i + 1, i + 1
        steps: list[Step] = []
        while i < len(lines) and lines[i].strip() != "```":
            text = lines[i]
            if text.startswith("$ "):
                command = text[2:]
                while not _complete(command) and i + 1 < len(lines) and lines[i + 1].strip() != "```":
                    i += 1
                    command += "\n" + lines[i]
                steps.append(Step(command))
            elif steps:
                steps[-1].expected.append(text)
            i += 1
        kind, reason = (setup[1], setup[2] or "") if setup else ("fresh", "")
        sessions.append(Session(page, start, kind, reason, steps, files))
        i += 1
    return sessions


SESSIONS = [s for page in PAGES for s in parse(page)]


def _mask(line: str) -> str:
    for pattern, mark in _MASKS:
        line = pattern.sub(mark, line)
    return " ".join(line.split())  # a column's width moves with what else is listed


def _line_matches(expected: str, actual: str) -> bool:
    parts = [re.escape(p) for p in _mask(expected).split("…")]
    return re.fullmatch(".*?".join(parts), _mask(actual)) is not None


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` lines are what `expected` says, `…` lines standing for any lines."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "…":
        return any(matches(rest, actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and _line_matches(head, actual[0]) and matches(rest, actual[1:])


def contains_in_order(expected: list[str], actual: list[str]) -> bool:
    """Whether each expected line matches some line of `actual`, in order."""
    k = 0
    for want in expected:
        while k < len(actual) and not _line_matches(want, actual[k]):
            k += 1
        if k == len(actual):
            return False
        k += 1
    return True


def _ports(session: Session) -> dict[str, str]:
    text = "\n".join(s.command + "\n" + "\n".join(s.expected) for s in session.steps)
    text += "\n".join(session.files.values())
    return {n: str(free_port()) for n in sorted(set(_PORT.findall(text)))}


def _with_ports(text: str, ports: dict[str, str]) -> str:
    return _PORT.sub(lambda m: ports.get(m[1], m[1]), text)


def _unported(line: str, back: dict[re.Pattern[str], str]) -> str:
    for pattern, number in back.items():
        line = pattern.sub(number, line)
    return line


def _swapped(text: str, swaps: dict[str, str]) -> str:
    for page, real in swaps.items():
        text = text.replace(page, real)
    return text


PG_ON_PAGE = "postgresql://ledger@127.0.0.1:45275/ledger"


def pg_swaps(url: str) -> dict[str, str]:
    """What stands for the page's PostgreSQL URL and its side files' stem on the server at `url`."""
    from ledger.storage.interface import side_path

    return {PG_ON_PAGE: url, side_path(PG_ON_PAGE, "").name: side_path(url, "").name}


def _answers(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait_for_port(port: int) -> None:
    wait_until(lambda: _answers(port), f"an answer on port {port}", WAIT_S)


MARK = "\x1e"  # between two commands' output on the session's stdout


def run(
    session: Session, folder: Path, check: bool = True, swaps: dict[str, str] | None = None
) -> list[list[str]]:
    """Run the session's commands in `folder`, comparing each one's output as it goes (unless not
    `check`); what each printed (a background command: what the page says). `swaps`: text the page
    names and what stands for it here, both ways, as for ports."""
    printed: list[list[str]] = []
    ports = _ports(session)
    swaps = swaps or {}
    for name, text in session.files.items():
        (folder / name).write_text(_with_ports(text, ports), encoding="utf-8")
    waiting: list[tuple[str, list[str], Path]] = []  # background output to find by the end
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(folder)
    notices = (folder / ".shell.log").open("w")  # the shell's own job notices, not a command's output
    shell = subprocess.Popen(
        ["bash", "--norc", "--noprofile"],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=notices,
        text=True,
        start_new_session=True,
    )
    notices.close()
    assert shell.stdin is not None and shell.stdout is not None
    jobs: list[int] = []  # each background job's process group, stopped at the end
    # job control, as in a terminal: `kill %1` stops the job's whole process group
    shell.stdin.write("set -m\n")
    try:
        for n, step in enumerate(session.steps):
            command = _swapped(_with_ports(step.command, ports), swaps)
            expected = [_swapped(_with_ports(line, ports), swaps) for line in step.expected]
            if step.background:
                log = folder / f".background-{n}.log"
                job = _swapped(_with_ports(step.bare, ports), swaps)[:-1]
                # the job ends only once its command has (`trap`): `kill %1; wait` then frees the port
                shell.stdin.write(
                    f"{{ trap : TERM; {job}\n}} < /dev/null > {log} 2>&1 &\nprintf '{MARK}%s\\n' \"$!\"\n"
                )
                shell.stdin.flush()
                jobs.append(int(shell.stdout.readline()[1:]))
                port = re.search(r"--port (\d+)", command)
                if port:
                    _wait_for_port(int(port[1]))
                if expected:
                    waiting.append((command, expected, log))
                printed.append(step.expected)
                continue
            # stdin is the script itself: no command may read it
            shell.stdin.write(f"{{ {command}\n}} < /dev/null 2>&1\nprintf '{MARK}%s\\n' \"$?\"\n")
            shell.stdin.flush()
            out: list[str] = []
            for raw in iter(shell.stdout.readline, ""):
                if raw.startswith(MARK):
                    code = int(raw[1:].strip())
                    break
                out.append(raw.rstrip("\n"))
            else:
                raise AssertionError(f"{session.id}: the shell ended during {command!r}: {out}")
            back = {re.compile(rf"(?<=[:\s=]){free}\b"): number for number, free in ports.items()}
            unswaps = {real: page for page, real in swaps.items()}
            printed.append([_swapped(_unported(line, back), unswaps) for line in out])
            if not check:
                continue
            assert matches(expected, out), _report(session, command, expected, out)
            if "$?" not in command:
                assert code == 0, f"{session.id}: {command!r} exited {code}:\n" + "\n".join(out)
        for command, expected, log in waiting:
            poll(functools.partial(_logged, expected, log), WAIT_S)
            if check:
                assert contains_in_order(expected, _read(log)), _report(
                    session, command, expected, _read(log)
                )
    finally:
        for group in [*jobs, shell.pid]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, 15)
        shell.wait(timeout=WAIT_S)
    return printed


def _read(log: Path) -> list[str]:
    return log.read_text(errors="replace").splitlines() if log.exists() else []


def _logged(expected: list[str], log: Path) -> bool:
    """Whether the job's log shows the expected lines yet."""
    return contains_in_order(expected, _read(log))


def _report(session: Session, command: str, expected: list[str], actual: list[str]) -> str:
    return (
        f"{session.id}: $ {command}\n--- the page says:\n" + "\n".join(expected) + "\n--- it printed:\n"
        + "\n".join(actual)
    )  # fmt: skip


@pytest.mark.sqlite_only("the sessions use ./ledger.db, a SQLite file, as a reader's folder does")
@pytest.mark.parametrize("session", SESSIONS, ids=[s.id for s in SESSIONS])
def test_a_documented_session_holds(session: Session, tmp_path: Path, request: pytest.FixtureRequest):
    if session.setup == "skip":
        pytest.skip(f"not run: {session.reason}")
    swaps = {}
    if session.setup == "postgresql":
        cluster: PgCluster = request.getfixturevalue("pg_cluster")
        url = cluster.create_db("docs")
        request.addfinalizer(lambda: cluster.drop_db(url))
        swaps = pg_swaps(url)
    run(session, prepare(session, tmp_path / "session"), swaps=swaps)


def prepare(session: Session, folder: Path) -> Path:
    """The folder a session starts in, set up as its comment says."""
    known = ("fresh", "sample", "synthetic", "postgresql")
    assert session.setup in known, f"{session.id}: unknown set-up {session.setup!r}"
    folder.mkdir()
    if session.setup == "synthetic":
        from bench.timeline import build

        build(str(folder / "synthetic.db"))
    if session.setup == "sample":
        from service.ledger import Ledger

        ledger = Ledger(str(folder / "ledger.db"))
        ledger.import_bytes(SAMPLE.read_bytes())
        ledger.close()
    return folder


def test_every_page_has_sessions_the_test_reads():
    """The README carries sessions, and no page hides a broken fence from this test."""
    assert any(s.page.name == "README.md" and s.setup != "skip" for s in SESSIONS)
    assert [s.id for s in SESSIONS if s.setup == "skip"] == [], "every session runs, servers and all"
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert text.count("```console") == len([s for s in SESSIONS if s.page == page]), page
        # a session in a fence of another kind would be shown to readers and never run
        unread = re.findall(r"^```(?!console)\w*\n\$ .*", text, flags=re.MULTILINE)
        assert unread == [], f"{page}: sessions outside ```console fences: {unread}"


@pytest.mark.parametrize(
    ("command", "background"),
    [
        ("ledger serve --port 8089 &", True),
        ("ledger serve --port 8089 &      # and starts it again", True),
        ("make && ledger serve", False),
        ("echo '&'", False),
        ("kill %1; wait                # the operator stops it", False),
    ],
)
def test_which_commands_run_in_the_background(command: str, background: bool):
    assert Step(command).background is background


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a 1", "b"], ["a 1", "b"], True),
        (["a 1"], ["a 2"], False),
        (["head 3f8d1c99aa"], ["head 0000aaaa11"], True),
        (["w 3cad3b77-0ecb-4e9e-bec4-041347b1d7a5"], ["w 0e0b7a11-9c2d-4f00-8a1b-5d3e2f1a0b9c"], True),
        (["watch 3cad3b77-0ecb"], ["watch 0e0b7a11-9c2d"], False),
        (["at 2026-12-01T18:52:55Z"], ["at 2027-01-01T00:00:00.5+00:00"], True),
        (["took 0.10 s"], ["took 12 s"], True),
        (["events     132"], ["events 132"], True),
        (["events 132"], ["events 133"], False),
        (["x…z"], ["x anything z"], True),
        (["a", "…", "z"], ["a", "1", "2", "z"], True),
        (["a", "…", "z"], ["a", "z"], True),
        (["a", "…"], ["a", "b", "c"], True),
        (["a", "…", "z"], ["a", "1"], False),
        ([], ["unexpected"], False),
    ],
)
def test_how_lines_are_compared(expected: list[str], actual: list[str], ok: bool):
    assert matches(expected, actual) is ok


def write(page: Path) -> None:
    """Rewrite each session of `page` that is run with what its commands print now (as cog does), for
    a developer to review: `python -m tests.e2e.test_docs docs/PAGE.md`. A written `…` is lost."""
    import tempfile

    lines = page.read_text(encoding="utf-8").splitlines()
    for session in reversed(parse(page)):
        if session.setup == "skip":
            continue
        cluster = PgCluster.start() if session.setup == "postgresql" else None
        with tempfile.TemporaryDirectory() as tmp:
            swaps = pg_swaps(cluster.create_db("docs")) if cluster else {}
            printed = run(session, prepare(session, Path(tmp) / "session"), check=False, swaps=swaps)
        if cluster:
            cluster.stop()
        body = []
        for step, out in zip(session.steps, printed, strict=True):
            body += ["$ " + step.command.split("\n")[0], *step.command.split("\n")[1:], *out]
        end = next(k for k in range(session.line, len(lines)) if lines[k].strip() == "```")
        lines[session.line : end] = body
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        write(Path(name).resolve())
