"""Write routes: batches of events, records, and source files (`POST /ingest/{source}`)."""
