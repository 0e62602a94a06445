"""Standing alerts: watches and what they cover, one alert per (watch, work, notice) raised from the
log, and the webhook outbox's delivery rules (signatures, backoff). The HTTP POST itself is the door's.
May import `ledger`, `projections` and `service.collections`."""
