"""Projections: pure functions from ledger events to views (the record as of T)."""
