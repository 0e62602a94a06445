"""Standing alerts over HTTP: watches and their alerts, deliveries and SSE, a paper's Atom feed, the
deliverer's loop and the webhook POST with its address policy against request forgery.
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
