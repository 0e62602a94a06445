"""The one error tree of the ledger; the API maps it to HTTP in one handler."""

from __future__ import annotations

from typing import Any


class LedgerError(Exception):
    """Base of every error the ledger raises on purpose."""

    code = "ledger_error"
    http_status = 500

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """The error JSON body: {"error": {code, message, details}}."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidEvent(LedgerError):
    """Input that breaks a rule; `where` names the event index or record path and field."""

    code = "invalid"
    http_status = 422

    def __init__(self, where: str, reason: str, *, details: Any = None) -> None:
        super().__init__(f"{where}: {reason}" if where else reason, details=details)
        self.where = where
        self.reason = reason
        if self.details is None:
            self.details = {"where": where, "reason": reason}


class Conflict(LedgerError):
    """An event id reused with other content, or a stream not at the expected version."""

    code = "conflict"
    http_status = 409


class NotFound(LedgerError):
    """Nothing to answer with, e.g. a paper with no snapshot as of T."""

    code = "not_found"
    http_status = 404


class ChainBroken(LedgerError):
    """The stored chain does not match its bytes at `seq`."""

    code = "chain_broken"
    # the ledger cannot vouch for what it serves until an operator looks: unavailable, not a crash
    http_status = 503

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"chain broken at seq {seq}: {reason}", details={"seq": seq, "reason": reason})
        self.seq = seq
        self.reason = reason
