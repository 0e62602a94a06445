"""citation-ledger: an append-only, hash-chained ledger of citation observations."""

__version__ = "0.1.0"
