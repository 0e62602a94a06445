"""The `ledger` command line: a peer of the HTTP API on the top floor.
May import `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only through `service.ledger`,
never the API."""
