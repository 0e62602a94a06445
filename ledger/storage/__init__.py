"""Storage: the narrow interfaces every backend offers, the SQL written once against a small dialect
(`sql.py`, `sql_store.py`), the current layout described once (`schema.py`), the keys and spans each
event implies, the works index, alerts' tables, the append transaction and group commit, verify's walk,
and one folder per backend (`sqlite/`, `postgresql/`) holding only connections, transactions, locks and
its frozen schema steps. May import `ledger.model` and `ledger.tlog`."""
