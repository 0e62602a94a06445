"""Routes about the log itself: the evidence pages and their live SSE stream, checkpoints and proofs,
offline bundles, a held checkpoint's check, and the background cosigner that asks the witnesses.
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
