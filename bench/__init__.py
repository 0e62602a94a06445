"""Benchmarks of the ledger against this machine's own limits (outside the test run)."""
