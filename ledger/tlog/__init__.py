"""The transparency log: the hash chain of ledger-v1.md, the RFC 6962 Merkle tree and its proofs,
C2SP signed checkpoints and cosignatures, a witness's own state, and a held checkpoint against the tree
now. May import `ledger.model`; it reads a store only through the small protocols it declares
(`ledger.tlog.stored`), never a backend."""
