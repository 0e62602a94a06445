"""The PostgreSQL backend (psycopg 3): its connections, advisory locks and schema steps. May import the
rest of `ledger.storage`, `ledger.model` and `ledger.tlog`; psycopg is imported only here, so SQLite users
need no driver."""

from __future__ import annotations

from ledger.storage.interface import Unsupported


def require_driver() -> None:
    """Refuses a postgresql:// ledger, naming the extra to install, when psycopg is missing."""
    try:
        import psycopg  # noqa: F401 - an optional dependency, imported only to say which extra is missing
    except ImportError:
        raise Unsupported(
            "a postgresql:// ledger needs the PostgreSQL driver (psycopg 3): "
            "pip install 'citation-ledger[postgresql]'"
        ) from None
