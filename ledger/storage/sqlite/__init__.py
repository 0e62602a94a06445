"""The SQLite backend: its connection and transaction settings (WAL, `BEGIN IMMEDIATE`), its tables'
SQLite-only parts and its schema steps. May import the rest of `ledger.storage` and `ledger.tlog`."""
