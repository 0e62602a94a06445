"""The token file takes a digest as people make it, `sha256sum`'s own line included."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from api.auth import read_person_lines, read_token_file

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


ANY = "tok#en, with = and ; and spaces"  # a token's text may hold anything: its line holds its digest
ANY_DIGEST = hashlib.sha256(ANY.encode()).hexdigest()


@pytest.mark.parametrize(
    ("line", "persons"),
    [
        (f"person {ANY_DIGEST} Ada Lovelace", [(ANY_DIGEST, "Ada Lovelace")]),
        (f"  person\tsha256:{ANY_DIGEST.upper()}   Grace  Hopper  ", [(ANY_DIGEST, "Grace  Hopper")]),
        # the name runs to the end of the line: a # there is part of it, not a comment
        (f"person {ANY_DIGEST} Ada #1", [(ANY_DIGEST, "Ada #1")]),
        (f"person {ANY_DIGEST}", []),  # no name
        ("person s3cret Ada", []),  # a token, not its digest: never read as one
        (f"# person {ANY_DIGEST} Ada", []),
        (f"personal {ANY_DIGEST} Ada", []),
    ],
)
def test_a_person_line_binds_a_name_to_a_digest_and_is_no_token(
    tmp_path: Path, line: str, persons: list[tuple[str, str]]
) -> None:
    path = tmp_path / "ledger.db.tokens"
    path.write_text(f"{DIGEST}\n{line}\n")
    path.chmod(0o600)
    assert read_token_file(str(path)) == [DIGEST]
    assert read_person_lines(str(path)) == persons
