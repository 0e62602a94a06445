"""Intake of files: read as streams (gzip, zstandard), checked whole, then appended in batches that a
later run resumes after. May import `ledger` and the rooms of `service` below it (service.ledger,
service.ops, service.children)."""
