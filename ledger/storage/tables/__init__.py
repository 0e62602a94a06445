"""The SQL store's tables by capability, each one small object the store offers (`store.tree`,
`store.spans`, ...), written once over the dialect. May import `ledger.model`, `ledger.tlog`,
`ledger.storage.sql`, `ledger.storage.shared`, `ledger.storage.derived`, `ledger.storage.interface`
and `ledger.storage.records`."""
