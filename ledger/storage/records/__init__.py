"""A record's reads over the SQL store: the reader a snapshot yields, and how the events past the
spans' position fold into it. May import `ledger.model`, `ledger.storage.sql`, `ledger.storage.shared`,
`ledger.storage.derived` and `ledger.storage.append`."""
