"""The SQL store's tables by capability, each one small object the store offers (`store.tree`,
`store.spans`, ...), the statements several of them share (`shared.py`), and the record reader a
snapshot yields (`reader.py`, with `inbound.py`: how the events past the spans' position fold in),
written once over the dialect. May import `ledger.model`, `ledger.tlog`, `ledger.storage.sql`,
`ledger.storage.derived`, `ledger.storage.append` and `ledger.storage.interface`."""
