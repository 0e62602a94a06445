"""Indexes derived from the events, never told anything the events do not say: the lookup keys each
event implies (and the levels that keep them), inbound spans and their per-day counts, the works
index a source ingest matches against, the standing checks' per-work rows, the title index, and the
backfill that derives them for a ledger stored before them. Each is recomputed by verify.
May import `ledger.model` and the SQL of `ledger.storage.sql`; the stores import these, not the reverse."""
