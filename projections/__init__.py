"""Projections: pure functions from ledger events to views (the record as of T). May import `ledger.model`
and `ledger.storage` (its read interfaces and derivation rules)."""
