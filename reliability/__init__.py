"""Reliability drivers: concurrent load, crashes, fuzzing and backups against a real ledger."""
