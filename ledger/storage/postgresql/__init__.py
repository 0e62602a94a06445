"""The PostgreSQL backend (psycopg 3): its connections, advisory locks and schema steps. May import the
rest of `ledger.storage`; psycopg is imported only here, so SQLite users need no driver."""
