"""Routes about a paper's record: the record JSON and page, the paper page with its timeline, title
search, the integrity report, a kept record's check (`POST /verify`), and the caches of records and
timelines kept per ledger head.
May import the rest of `api`, `service`, `projections`, `ledger.model` and `ledger.tlog`; storage only
through `service.ledger`."""
