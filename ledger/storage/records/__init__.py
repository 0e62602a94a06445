"""A record's reads over the SQL store: the reader a snapshot yields. May import `ledger.storage.tables`."""
