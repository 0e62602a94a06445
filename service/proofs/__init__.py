"""Proofs for people who do not trust the server: signed checkpoints and inclusion proofs, offline
evidence bundles (written and checked a member at a time), a tlog-witness for other logs, the
ledger's side of its own witnesses, and a monitor of a remote ledger's checkpoints.
May import `ledger`, `projections`, the `service.ledger` facade and the cosigner in
`service.ops.witnessing`."""
