"""The `ledger` command line: a peer of the HTTP API on the top floor."""
