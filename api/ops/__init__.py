"""What the operator sees: Prometheus metrics, the request middleware, JSON logs, the scrubber's
schedule.
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
