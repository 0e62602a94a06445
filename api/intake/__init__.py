"""Write routes: batches of events, records, and source files (`POST /ingest/{source}`).
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
