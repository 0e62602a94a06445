"""The HTTP API, a peer of the CLI on the top floor: the FastAPI app (`app.py`), the answer shapes
(`errors.py`, `docs.py`), settings, write auth and limits, the protocol guard (`server.py`), and a room
per family of routes: `records` (record JSON and pages, timeline, search, integrity), `log` (evidence,
live events, proofs, bundles, held checkpoints, witnesses), `intake` (events, records, source files),
`alerts` (watches, feeds, webhooks), `ops` (metrics, logs, scrub); `witness` is the witness's own app.
May import `service`, `projections` and `ledger.model`/`ledger.tlog`; storage only through the facade."""
