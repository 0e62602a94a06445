"""Running a ledger: online backup, Litestream replication, the scheduled chain walk (scrub), and the
status read from the database alone (`ledger status`, the gauges of /metrics).
May import `ledger`."""
