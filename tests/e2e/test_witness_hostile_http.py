"""Hostile clients against a real `ledger witness serve`: the ledger server's guards hold it too. Heads
trickled a line at a time and bodies trickled a byte at a time get a 408 in the JSON error shape after
the deadline, while a normal log's checkpoint is still cosigned. (The witness keeps its own SQLite state
file, whichever backend the suite runs on.)"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from api.server import MAX_HEAD_BYTES
from tests.api_fixtures import free_port
from tests.e2e.test_hostile_http import WAIT_S, _json_error, _read_to_end, _slow_head, _trickle
from tests.e2e.test_witness_process import _env, _ledger, witness_process
from tests.service.proofs.test_witness import LOG, add

ENV = {"LEDGER_IDLE_TIMEOUT": "2", "LEDGER_BODY_TIMEOUT": "2", "LEDGER_BODY_MIN_RATE": "16384"}
HOLDERS = 60  # hostile connections at once: a bounded count, well inside the test's descriptors


@pytest.fixture(scope="module")
def witness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """One witness for the module, with the ledger server's deadlines set short; its address."""
    port = free_port()
    with witness_process(tmp_path_factory.mktemp("witness-hostile"), port, env=ENV):
        yield "127.0.0.1", port


def _cosigned(address: tuple[str, int]) -> float:
    """A normal log's next checkpoint (one leaf more than the witness holds), cosigned within a generous
    bound; the seconds it took. The witness's 409 names the size it holds, whatever test ran before."""
    url = f"http://{address[0]}:{address[1]}/add-checkpoint"
    started = time.monotonic()
    first = httpx.post(url, content=add(0, 1), timeout=WAIT_S)
    assert first.status_code in (200, 409), first.text
    held = 1 if first.status_code == 200 else int(first.text)
    r = httpx.post(url, content=add(held, held + 1), timeout=WAIT_S)
    assert r.status_code == 200, r.text
    return time.monotonic() - started


def _hold(target: Callable[[int], None], n: int) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    return threads


def _joined(threads: list[threading.Thread]) -> None:
    deadline = time.monotonic() + WAIT_S
    for t in threads:
        t.join(timeout=max(deadline - time.monotonic(), 0.01))


def test_heads_trickled_a_line_at_a_time_are_408_and_others_are_served(witness: tuple[str, int]) -> None:
    result: dict[int, tuple[bytes, float]] = {}
    stop = threading.Event()
    threads = _hold(lambda i: _slow_head(witness, result, i, stop), HOLDERS)
    try:
        served = _cosigned(witness)  # while every slow head is still within its deadline
        _joined(threads)
    finally:
        stop.set()
    assert len(result) == HOLDERS, (
        f"{HOLDERS - len(result)} of {HOLDERS} slow heads still open after {WAIT_S} s"
    )
    for answer, _ in result.values():
        assert _json_error(answer, 408)["code"] == "request_timeout"
    took = sorted(t for _, t in result.values())
    print(
        f"{HOLDERS} slow heads on the witness, idle timeout 2 s: closed after "
        f"{took[0]:.2f}..{took[-1]:.2f} s; a checkpoint cosigned meanwhile in {served:.2f} s"
    )
    _cosigned(witness)


def test_bodies_trickled_a_byte_at_a_time_are_408_and_others_are_served(witness: tuple[str, int]) -> None:
    head = b"POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
    answers: dict[int, bytes] = {}
    threads = _hold(lambda i: answers.__setitem__(i, _trickle(witness, head)), HOLDERS)
    served = _cosigned(witness)  # while every slow body is still within its deadline
    _joined(threads)
    assert len(answers) == HOLDERS, f"{HOLDERS - len(answers)} of {HOLDERS} slow bodies still open"
    for answer in answers.values():
        error = _json_error(answer, 408)
        assert error["code"] == "request_timeout" and "LEDGER_BODY_TIMEOUT" in error["message"]
    print(f"{HOLDERS} slow bodies on the witness: all 408; a checkpoint cosigned meanwhile in {served:.2f} s")


def test_a_head_too_large_is_431_in_the_error_shape(witness: tuple[str, int]) -> None:
    header = b"POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1024 * 1024) + b"\r\n\r\n"
    with socket.create_connection(witness, timeout=WAIT_S) as s:
        with contextlib.suppress(OSError):  # the server may stop reading; its answer must still come
            s.sendall(header)
        answer = _read_to_end(s, time.monotonic() + WAIT_S)
    error = _json_error(answer, 431)
    assert error["code"] == "request_header_fields_too_large" and str(MAX_HEAD_BYTES) in error["message"]


def test_a_bad_deadline_setting_stops_the_witness_at_start(tmp_path: Path) -> None:
    cmd = _ledger(
        "witness", "serve", "--key", str(tmp_path / "witness.key"), "--log", LOG.verifier.vkey,
        "--db", str(tmp_path / "witness.db"), "--port", str(free_port()),
    )  # fmt: skip
    out = subprocess.run(
        cmd, capture_output=True, text=True, env=_env({"LEDGER_BODY_TIMEOUT": "soon"}), timeout=WAIT_S
    )
    assert out.returncode != 0 and "LEDGER_BODY_TIMEOUT" in out.stderr, out.stderr
