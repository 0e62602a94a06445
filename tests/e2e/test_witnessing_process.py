"""Real processes on 127.0.0.1: a ledger server sending its checkpoints to two witness servers, and a
monitor requiring both cosignatures. A view shown to one user alone (a split view, signed with the
same key) gets no cosignature, and the monitor refuses it; the rewrite is also caught by the
monitor's kept checkpoint and by `ledger verify --checkpoint`. A ledger rolled back below what the
witnesses cosigned gets nothing; a witness that hangs blocks no append and no other cosignature; each
checkpoint costs one request per witness."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import httpx
from click.testing import CliRunner

from cli.main import main
from ledger.tlog import merkle_store
from ledger.tlog.checkpoint import Checkpointer
from ledger.tlog.cosign import cosignatures, load_or_create_witness_key, parse_witness_vkey
from ledger.tlog.witness_state import WitnessState
from service.ledger import Ledger
from service.ops.witnessing import cosigned_note, request_body
from tests.api_fixtures import Server, free_port, ledger_command, running_server
from tests.e2e.test_witness_process import REPO, _env, _ledger, witness_process
from tests.factories import measurement_json
from tests.ledger.tlog.test_checkpoint import _grow
from tests.ledger.tlog.test_held_checkpoint import _rolled_back, _rolled_back_and_regrown, _victim
from tests.waiting import wait_until

NewDb = Callable[[str], str]
DEADLINE_S = 60.0  # generous: the cosigner looks every 0.2 s here; this only bounds a broken run


class Witnesses(NamedTuple):
    """Witness servers up: the LEDGER_WITNESSES file naming them, their vkeys, URLs and homes."""

    file: Path
    vkeys: list[str]
    urls: list[str]
    homes: list[Path]


@contextmanager
def witness_servers(tmp: Path, log_vkey: str, count: int = 2) -> Iterator[Witnesses]:
    """`ledger witness serve` processes for the log (witness1.example, ...), up and answering."""
    vkeys, urls, homes = [], [], []
    with ExitStack() as stack:
        for i in range(1, count + 1):
            home = tmp / f"witness{i}"
            home.mkdir()
            name = f"witness{i}.example"
            vkey = subprocess.run(
                _ledger("witness", "vkey", "--key", str(home / "witness.key"), "--name", name),
                capture_output=True, text=True, env=_env(), cwd=REPO, check=True,
            ).stdout.strip()  # fmt: skip
            port = free_port()
            stack.enter_context(witness_process(home, port, name, log_vkey))
            urls.append(f"http://127.0.0.1:{port}")
            vkeys.append(vkey)
            homes.append(home)
        path = tmp / "witnesses"
        path.write_text("".join(f"{url} {vkey}\n" for url, vkey in zip(urls, vkeys, strict=True)))
        yield Witnesses(path, vkeys, urls, homes)


def _cosigned(server: Server, size: int, vkeys: list[str]) -> str:
    """GET /checkpoint until it is a checkpoint of `size` events cosigned by each of `vkeys`."""
    witnesses = [parse_witness_vkey(v) for v in vkeys]
    seen = [""]

    def cosigned() -> str | None:
        answer = httpx.get(f"{server.base}/checkpoint", timeout=10)
        seen[0] = note = answer.text
        if (
            answer.headers.get("Ledger-Checkpoint") == "cosigned"
            and f"\n{size}\n" in note
            and len(cosignatures(note, witnesses)) == len(witnesses)
        ):
            return note
        return None

    return wait_until(
        cosigned, lambda: f"cosigned at size {size}: {seen[0]!r}\n{server.log()}", DEADLINE_S, every=0.1
    )


def _monitor(base: str, vkey: str, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [*ledger_command(), "monitor", base, "--key", vkey, "--state", str(state), "--once", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def test_witnesses_cosign_the_ledger_and_refuse_a_split_view(new_db: NewDb, tmp_path: Path) -> None:
    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    env = {"LEDGER_CHECKPOINT_INTERVAL": "0.2"}
    with witness_servers(tmp_path, vkey) as witnesses:
        wkeys = witnesses.vkeys
        env["LEDGER_WITNESSES"] = str(witnesses.file)
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
            # the witnesses refused its round
            wait_until(lambda: "not cosigned by" in server.log(), server.log, DEADLINE_S, every=0.1)
            assert "Ledger-Checkpoint" not in httpx.get(f"{server.base}/checkpoint").headers
            new_user = _monitor(server.base, vkey, tmp_path / "new-user", *quorum)
            assert (
                new_user.returncode == 2 and "not cosigned: 0 valid witness cosignature(s)" in new_user.stdout
            )
            old_user = _monitor(server.base, vkey, state)  # the kept checkpoint catches it without witnesses
            assert old_user.returncode == 2 and "rewritten: the tree of 50 events" in old_user.stdout
    caught = CliRunner().invoke(main, ["verify", "--db", split, "--checkpoint", "-", *quorum], input=held)
    assert caught.exit_code == 2 and "Held checkpoint: rewritten: at size 40" in caught.output


# -- a truncation caught by the witnesses --------------------------------------------------------------


def test_witnesses_refuse_a_ledger_rolled_back_below_what_they_cosigned(
    new_db: NewDb, tmp_path: Path
) -> None:
    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    env = {"LEDGER_CHECKPOINT_INTERVAL": "0.2"}
    with witness_servers(tmp_path, vkey) as witnesses:
        env["LEDGER_WITNESSES"] = str(witnesses.file)
        with running_server(victim.db, env=env) as server:
            held = _cosigned(server, 40, witnesses.vkeys)
        rolled = _rolled_back(victim, new_db)  # events 31..40 gone; the same key, no checkpoint of its own
        with running_server(rolled, env=env) as server:
            # each witness answers 409 "40"; the cosigner sends nothing it cannot prove and says why
            refused = "more than the 30 it holds now"
            wait_until(lambda: server.log().count(refused) >= 2, server.log, DEADLINE_S, every=0.1)
            assert "checkpoint 30: not cosigned by" in server.log()
            answer = httpx.get(f"{server.base}/checkpoint", timeout=10)
            assert "Ledger-Checkpoint" not in answer.headers and "\n30\n" in answer.text
            assert cosigned_note(Ledger(rolled).store) is None  # nothing new cosigned
            for url in witnesses.urls:  # asked straight, each witness refuses too
                asked = httpx.post(f"{url}/add-checkpoint", content=request_body(0, [], answer.text))
                assert (asked.status_code, asked.text) == (409, "40\n")
            quorum = [a for w in witnesses.vkeys for a in ("--witness", w)]
            new_user = _monitor(server.base, vkey, tmp_path / "new-user", *quorum)
            assert new_user.returncode == 2 and "not cosigned" in new_user.stdout, new_user.stdout
    origin = held.split("\n", 1)[0]
    for home in witnesses.homes:  # what they cosigned is still the checkpoint of 40 the users hold
        kept = WitnessState(home / "witness.db").latest(origin)
        assert kept is not None and kept.size == 40 and f"\n{merkle_store.b64(kept.root)}\n" in held


# -- speed: a witness that hangs never blocks appends, and each checkpoint costs one round trip -----------

TOKEN = "witness-process-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _accepted(sock: socket.socket) -> Iterator[socket.socket]:
    """Each connection made to a listening socket, until it is closed."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        yield conn


class _Silent:
    """A TCP port that accepts connections and never answers: a witness that hangs."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for conn in _accepted(self.sock):
            self.held.append(conn)

    def close(self) -> None:
        """Close every connection: the requests hanging on it end now rather than at their timeout."""
        self.sock.close()
        for conn in self.held:
            conn.close()


class _Proxy:
    """A TCP proxy to a witness that counts the connections made and the add-checkpoint requests sent."""

    MARK = b"POST /add-checkpoint "

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.requests = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for conn in _accepted(self.sock):
            with self.lock:
                self.connections += 1
            up = socket.create_connection((self.upstream.hostname, self.upstream.port))
            threading.Thread(target=self._pump, args=(conn, up, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, conn, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, count: bool) -> None:
        tail = b""
        try:
            while chunk := src.recv(65536):
                if count:
                    seen = tail + chunk
                    with self.lock:
                        self.requests += seen.count(self.MARK)
                    tail = seen[-(len(self.MARK) - 1) :]
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def counts(self) -> tuple[int, int]:
        """(connections, add-checkpoint requests) so far."""
        with self.lock:
            return self.connections, self.requests

    def close(self) -> None:
        """Stop accepting."""
        self.sock.close()


def _append(server: Server, i: int) -> None:
    """One event through the server's POST /events: answered 201."""
    event = measurement_json("2101.00001", f"2026-11-0{1 + i % 9}T00:00:{i:02d}Z", value=i)
    answer = httpx.post(f"{server.base}/events", json={"events": [event]}, headers=AUTH, timeout=60)
    assert answer.status_code == 201, answer.text


def test_a_hanging_witness_blocks_neither_appends_nor_the_next_cosigned_checkpoint(
    new_db: NewDb, tmp_path: Path
) -> None:
    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    hangs = _Silent()
    try:
        with witness_servers(tmp_path, vkey, count=1) as witnesses:
            silent_key = load_or_create_witness_key(tmp_path / "silent.key", "silent.example").vkey
            with witnesses.file.open("a") as f:
                f.write(f"http://127.0.0.1:{hangs.port} {silent_key}\n")
            env = {
                "LEDGER_CHECKPOINT_INTERVAL": "0.2",
                "LEDGER_WITNESSES": str(witnesses.file),
                "LEDGER_TOKENS": TOKEN,
            }
            with running_server(victim.db, env=env) as server:
                _cosigned(server, 40, witnesses.vkeys)
                for i in range(5):
                    _append(server, i)  # answered while the other witness has never answered
                    # a new checkpoint of the head, cosigned by the witness that answers, each time
                    _cosigned(server, 41 + i, witnesses.vkeys)
                assert hangs.held, "the hanging witness was never asked"
                follow = ["--witness", witnesses.vkeys[0], "--quorum", "1", "--events"]
                seen = _monitor(server.base, vkey, tmp_path / "monitor", *follow)
                assert seen.returncode == 0 and "events 1..45 read" in seen.stdout, seen.stdout + seen.stderr
                hangs.close()
    finally:
        hangs.close()


def test_each_checkpoint_costs_one_add_checkpoint_per_witness(new_db: NewDb, tmp_path: Path) -> None:
    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    with witness_servers(tmp_path, vkey) as witnesses:
        proxies = [_Proxy(url) for url in witnesses.urls]
        proxied = tmp_path / "proxied"
        proxied.write_text("".join(f"{p.url} {k}\n" for p, k in zip(proxies, witnesses.vkeys, strict=True)))
        env = {"LEDGER_CHECKPOINT_INTERVAL": "0.2", "LEDGER_WITNESSES": str(proxied), "LEDGER_TOKENS": TOKEN}
        try:
            with running_server(victim.db, env=env) as server:
                _cosigned(server, 40, witnesses.vkeys)
                assert [p.counts()[1] for p in proxies] == [1, 1]  # new witnesses: old 0 is accepted
                for i in range(4):
                    _append(server, i)
                    _cosigned(server, 41 + i, witnesses.vkeys)
                    assert [p.counts()[1] for p in proxies] == [2 + i, 2 + i]  # one request each
            with running_server(victim.db, env=env) as server:  # a restart: the sizes are learnt again
                _append(server, 10)
                _cosigned(server, 45, witnesses.vkeys)
                assert [p.counts()[1] for p in proxies] == [7, 7]  # old 0, 409 "44", then old 44
                _append(server, 11)
                _cosigned(server, 46, witnesses.vkeys)
                assert [p.counts()[1] for p in proxies] == [8, 8]
            for p in proxies:
                connections, requests = p.counts()
                assert connections < requests  # the cosigner keeps its connection to each witness
        finally:
            for p in proxies:
                p.close()
