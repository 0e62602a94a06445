"""Resolving over HTTP: POST /resolve and its jobs, a person's resolution, and how one reference was
resolved (its evidence), through the Ledger facade and service.resolver.
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
