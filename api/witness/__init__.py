"""The tlog-witness's own small app (`ledger witness serve`), carrying the protocol's answers."""
