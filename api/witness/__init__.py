"""The tlog-witness's own small app (`ledger witness serve`), carrying the protocol's answers.
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
