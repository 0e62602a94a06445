"""The ledger's own state, apart from the log: watches, alerts and the webhook outbox (`alerts.py`), and the
background resolve jobs (`jobs.py`). Nothing here is hashed and rows change in place; every table is
written once over a store's dialect (`ledger.storage.sql.DialectStore`), so both backends share it.
May import `ledger.model` and `ledger.storage.sql`."""
