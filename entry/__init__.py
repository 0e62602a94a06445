"""The `ledger` program, above both doors: the CLI's commands plus the two that start HTTP servers
(`ledger serve`, `ledger witness serve`), so the CLI and the API stay peers that never import each other.
May import every room of the house: `cli`, `api`, `service`, `projections` and `ledger`."""
