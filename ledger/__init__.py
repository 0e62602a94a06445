"""citation-ledger's ground floor: what an event is and how it is kept and proven.

Three rooms, each importing only from the rooms listed before it: `model` (events, the canonical
codec, I-JSON, instants, ids, DOIs, the record's types), `tlog` (the transparency log: the hash chain,
the RFC 6962 Merkle tree, signed checkpoints, cosignatures, held checkpoints) and `storage` (the
dialect, the statements written once, derived keys and spans, verify, and a folder per backend).
Nothing here knows of HTTP, a command line or a record's projection. May import nothing outside `ledger`.
"""

__version__ = "0.1.0"
