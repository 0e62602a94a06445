"""Standing alerts: watches as asked for and as stored, what they cover, one alert per (watch, work,
notice) raised from the log, a paper's notices in force, the addresses a webhook may reach, and the
webhook outbox's delivery rules (signatures, backoff). The HTTP POST itself is the door's.
May import `ledger`, `projections` and `service.collections`."""
