"""The SQL store's tables by capability, each one small object the store offers (`store.tree`,
`store.spans`, ...). Written once over the dialect; may import `ledger.storage.sql` and `derived`."""
