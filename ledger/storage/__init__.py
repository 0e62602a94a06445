"""Storage: the narrow interfaces every backend offers, the SQL written once against a small dialect
(`sql.py`, `sql_store.py`; `tables/`, one module per capability; `records/`, a record's reader), the
current layout described once (`schema.py`) and the one step that brings any earlier layout to it
(`upgrade.py`), the keys and spans each event implies, the works index, the state kept apart from the
log (`state/`: alerts, resolve jobs), the append transaction and group commit, verify's walk, and one
folder per backend (`sqlite/`, `postgresql/`) holding only connections, transactions, locks and the
version stamp of its layout. May import `ledger.model` and `ledger.tlog`."""
