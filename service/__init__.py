"""The application layer: the Ledger facade and what it serves (bundles, backup, replication, scrubbing,
source adapters), above the projections and below the CLI and the HTTP API."""
