"""The application: the `Ledger` facade both doors share, and what it serves, room by concern:
`alerts` (watches, alerts, webhook delivery), `proofs` (signed checkpoints, bundles and their check,
witnesses, monitors), `ops` (backup, replication, scrubbing, status), `sources` (published files in),
`search`. May import `projections` and `ledger`; knows no HTTP (a door passes its HTTP call in)."""
