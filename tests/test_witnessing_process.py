"""Real processes on 127.0.0.1: a ledger server sending its checkpoints to two witness servers, and a
monitor requiring both cosignatures. A view shown to one user alone (a split view, signed with the
same key) gets no cosignature, and the monitor refuses it; the rewrite is also caught by the
monitor's kept checkpoint and by `ledger verify --checkpoint`."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
from click.testing import CliRunner

from cli.main import main
from ledger.checkpoint import Checkpointer
from ledger.cosign import cosignatures, parse_witness_vkey
from service.ledger import Ledger
from tests.api_fixtures import Server, free_port, ledger_command, running_server
from tests.test_checkpoint import _grow
from tests.test_held_checkpoint import _rolled_back_and_regrown, _victim
from tests.test_witness_process import REPO, _env, _ledger, witness_process

NewDb = Callable[[str], str]
DEADLINE_S = 60.0  # generous: the cosigner looks every 0.2 s here; this only bounds a broken run


@contextmanager
def two_witnesses(tmp: Path, log_vkey: str) -> Iterator[tuple[Path, list[str]]]:
    """Two `ledger witness serve` processes for the log; the LEDGER_WITNESSES file and their vkeys."""
    lines, vkeys = [], []
    with ExitStack() as stack:
        for i in (1, 2):
            home = tmp / f"witness{i}"
            home.mkdir()
            name = f"witness{i}.example"
            vkey = subprocess.run(
                _ledger("witness", "vkey", "--key", str(home / "witness.key"), "--name", name),
                capture_output=True, text=True, env=_env(), cwd=REPO, check=True,
            ).stdout.strip()  # fmt: skip
            port = free_port()
            stack.enter_context(witness_process(home, port, name, log_vkey))
            lines.append(f"http://127.0.0.1:{port} {vkey}")
            vkeys.append(vkey)
        path = tmp / "witnesses"
        path.write_text("\n".join(lines) + "\n")
        yield path, vkeys


def _cosigned(server: Server, size: int, vkeys: list[str]) -> str:
    """GET /checkpoint until it is a checkpoint of `size` events cosigned by every witness."""
    witnesses = [parse_witness_vkey(v) for v in vkeys]
    deadline = time.monotonic() + DEADLINE_S
    while True:
        answer = httpx.get(f"{server.base}/checkpoint", timeout=10)
        note = answer.text
        if (
            answer.headers.get("Ledger-Checkpoint") == "cosigned"
            and f"\n{size}\n" in note
            and len(cosignatures(note, witnesses)) == 2
        ):
            return note
        assert time.monotonic() < deadline, f"not cosigned at size {size}: {note!r}\n{server.log()}"
        time.sleep(0.1)


def _monitor(base: str, vkey: str, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [*ledger_command(), "monitor", base, "--key", vkey, "--state", str(state), "--once", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def test_witnesses_cosign_the_ledger_and_refuse_a_split_view(new_db: NewDb, tmp_path: Path) -> None:
    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    env = {"LEDGER_CHECKPOINT_INTERVAL": "0.2"}
    with two_witnesses(tmp_path, vkey) as (witnesses, wkeys):
        env["LEDGER_WITNESSES"] = str(witnesses)
        quorum = [a for w in wkeys for a in ("--witness", w)] + ["--quorum", "2"]
        state = tmp_path / "monitor"
        with running_server(victim.db, env=env) as server:
            held = _cosigned(server, 40, wkeys)
            first = _monitor(server.base, vkey, state, *quorum)
            assert first.returncode == 0 and "first checkpoint kept: size 40" in first.stdout, first.stderr
            _grow(
                Ledger(victim.db), 40, 6, prefix="2107"
            )  # appended by another process: no wait on witnesses
            _cosigned(server, 46, wkeys)
            grown = _monitor(server.base, vkey, state, *quorum)
            assert grown.returncode == 0 and "consistent: 40 -> 46 events" in grown.stdout, grown.stderr

        # The operator shows another tree, with the same key and the same witnesses, to a new user.
        split = _rolled_back_and_regrown(victim, new_db)  # 45 events, 31..45 other ones
        _grow(Ledger(split), 200, 5, prefix="2108")  # past the 46 the users saw
        with running_server(split, env=env) as server:
            deadline = time.monotonic() + DEADLINE_S
            while "not cosigned by" not in server.log():  # the witnesses refused its round
                assert time.monotonic() < deadline, server.log()
                time.sleep(0.1)
            assert "Ledger-Checkpoint" not in httpx.get(f"{server.base}/checkpoint").headers
            new_user = _monitor(server.base, vkey, tmp_path / "new-user", *quorum)
            assert (
                new_user.returncode == 2 and "not cosigned: 0 valid witness cosignature(s)" in new_user.stdout
            )
            old_user = _monitor(server.base, vkey, state)  # the kept checkpoint catches it without witnesses
            assert old_user.returncode == 2 and "rewritten: the tree of 50 events" in old_user.stdout
    caught = CliRunner().invoke(main, ["verify", "--db", split, "--checkpoint", "-", *quorum], input=held)
    assert caught.exit_code == 2 and "Held checkpoint: rewritten: at size 40" in caught.output
