"""The one error tree of the ledger: a code, a message and details; how a door answers it is the door's."""

from __future__ import annotations

from ledger.model.jsonvalue import JsonInObject


class LedgerError(Exception):
    """Base of every error the ledger raises on purpose."""

    code = "ledger_error"

    def __init__(self, message: str, *, details: JsonInObject | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidEvent(LedgerError):
    """Input that breaks a rule; `where` names the event index or record path and field."""

    code = "invalid"

    def __init__(self, where: str, reason: str, *, details: JsonInObject | None = None) -> None:
        super().__init__(f"{where}: {reason}" if where else reason, details=details)
        self.where = where
        self.reason = reason
        if self.details is None:
            self.details = {"where": where, "reason": reason}


class Conflict(LedgerError):
    """An event id reused with other content, or a stream not at the expected version."""

    code = "conflict"


class NotFound(LedgerError):
    """Nothing to answer with, e.g. a paper with no snapshot as of T."""

    code = "not_found"


class ChainBroken(LedgerError):
    """The stored chain does not match its bytes at `seq`."""

    code = "chain_broken"

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"chain broken at seq {seq}: {reason}", details={"seq": seq, "reason": reason})
        self.seq = seq
        self.reason = reason
