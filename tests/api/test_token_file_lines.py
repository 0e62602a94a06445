"""The token file takes a digest as people make it, `sha256sum`'s own line included."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from api.auth import read_token_file

DIGEST = hashlib.sha256(b"s3cret").hexdigest()


@pytest.mark.parametrize(
    ("line", "read"),
    [
        (DIGEST, [DIGEST]),
        (f"{DIGEST}  -", [DIGEST]),  # echo -n s3cret | sha256sum
        (f"{DIGEST} *-", [DIGEST]),  # sha256sum --binary
        (f"sha256:{DIGEST.upper()}  # the CI token", [DIGEST]),
        (f"{DIGEST}  tokens.txt", []),  # the digest of a file, not of a token: refused
        ("s3cret", []),  # a plaintext token: refused, never matched
        (f"{DIGEST} - extra", []),
    ],
)
def test_a_line_is_a_digest_only_when_it_says_one(tmp_path: Path, line: str, read: list[str]):
    path = tmp_path / "ledger.db.tokens"
    path.write_text(line + "\n")
    path.chmod(0o600)
    assert read_token_file(str(path)) == read


@pytest.mark.process
def test_what_sha256sum_writes_is_read(tmp_path: Path):
    path = tmp_path / "ledger.db.tokens"
    made = subprocess.run(["sha256sum"], input=b"s3cret", capture_output=True, check=True)
    path.write_bytes(made.stdout)
    path.chmod(0o600)
    assert read_token_file(str(path)) == [DIGEST]
