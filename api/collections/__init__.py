"""Collections over HTTP: a named set of papers changed behind a write token (`POST /collections/{name}`)
and read by anyone as the ledger knew it at any instant (`GET /collections`, `GET /collections/{name}`).
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
