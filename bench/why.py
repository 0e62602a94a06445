"""Why a figure misses its target: the explanation stored beside it in results.json."""

from __future__ import annotations

from typing import Any

WHY: dict[str, str] = {
    "append_library": (
        "The bare reference appends rows to a table with only a rowid. The ledger's events table keeps "
        "two more B-trees whose keys have locality (UNIQUE (stream, stream_version) and "
        "events_stream_type_time: a batch's events share a few streams) and the events_no_replace "
        "trigger (two index probes per row). The keys without order (event ids, observation ids, cited "
        "arXiv ids, the standing checks' work ids) go to the small recent levels of event_keys and "
        "check_works (ledger/keys.py): each commit rewrites most of their few hundred leaf pages, and "
        "every 25,000 events a move writes the middle levels' leaf pages once (every 250,000 the big "
        "levels'). bench/floor.py measures this layout bare, with no ledger code, at about 0.4 of the "
        "peer's table: the levelled keys "
        "are what idempotency and the record's lookups cost. The same rows inserted with a bare "
        "executemany into a copy of the ledger at this size (baseline.into_product_schema: the "
        "events' rows, not their keys) bound the events table alone; the rest (validation, canonical "
        "encoding, uuid5, blake3) is the Python share in the profile."
    ),
    "append_http": (
        "Everything of the library append (see append_library), plus what the API does before it: the "
        "body is parsed to Python values and walked for floats and long strings in Python "
        "(codec.decode_json, "
        "limits.long_string), then each event is converted and rule-checked (importer.parse_batch). "
        "These are in ledger/codec.py, ledger/importer.py and api/writes.py."
    ),
    "http_singles": (
        "Each acknowledged append waits for a COMMIT whose WAL write covers the rows and their keys "
        "(see append_library), and the server's one Python process does the write path's validation, "
        "group-commit hand-off and the transaction on top of the same per-request HTTP work the no-op "
        "route does; the profile shows the split."
    ),
    "library_singles": (
        "Group commit shares each fsync among the waiting callers (8 here); the group's COMMIT writes "
        "the events' pages and the recent key levels' pages (see append_library), so it costs more than "
        "the bare one-row commit; the bare one-row transaction into the product schema "
        "(baseline.into_product_schema) shows it. The rest is the per-batch reads (existing ids, stream "
        "versions) and validation in Python, serialised by the GIL."
    ),
    "projection": (
        "The record's reads are index seeks (source_heads: a skip-scan over the source streams and a "
        "backward seek for each), so a miss is the Python projection itself; see the profile."
    ),
    "verify": (
        "verify joins each body from the stored columns (the bare chain's bytes), checks seq, prev_hash "
        "and the stream version, links it with blake3 like the bare chain, then does what it does not: "
        "parses observed_at and recorded_at to compare them with their index columns, hashes a Merkle "
        "leaf and its completed nodes (SHA-256, a compact range in Python), and compares every derived "
        "row (each event's keys, each standing check's per-work rows, read in seq order from both "
        "levels and merged) with the event's data. About 30 Python calls an event; the profile shows "
        "the split (ledger/verify.py, ledger/chain.py, ledger/merkle.py, ledger/keys.py)."
    ),
    "rss_verify": (
        "verify holds one page of rows, the stream versions, parse_ts's cache (65,536 instants) and the "
        "Merkle compact range; see the profile for what else grew."
    ),
    "get_record": ("Below the cache's reach, the record is rebuilt; see the profile."),
    "append_vs_peer": (
        "eventsourcing's SQLiteApplicationRecorder.insert_events runs, in one BEGIN ... COMMIT per "
        "call, one INSERT per event of four values already serialised (originator_id, "
        "originator_version, topic, state) into a table of two B-trees (rowid, and the (originator_id, "
        "originator_version) primary key), and reads nothing. Ledger.append re-checks each event's "
        "type, encodes it canonically, derives its uuid5 id, reads the existing ids and stream "
        "versions, chains blake3 hashes and writes 12 columns into three B-trees and the two-level keys "
        "(see append_library); bench/floor.py measures the bare cost of those keys."
    ),
    "singles_vs_peer": (
        "The peer's single event is one BEGIN, one INSERT into two B-trees and one COMMIT (one WAL "
        "fsync at FULL), from one caller. The ledger's group commit shares each COMMIT among the "
        "waiting callers (8 here), but each group's transaction does the ledger's per-batch reads, "
        "checks and writes (rows and keys) in one Python process (see library_singles)."
    ),
    "append_flat": (
        "The recent key levels stay small, but the bigger levels grow with the ledger: each move "
        "(every 25,000 events into the middle level, every 250,000 into the merged one) writes their "
        "leaf pages once, and each batch's lookups (existing ids, citing papers) probe them, reading "
        "pages outside SQLite's page cache as they grow; the 25-batch window holds one move into the "
        "middle level."
    ),
}


def explain(
    key: str, size: int, value: dict[str, Any], baseline: Any, backend: str = "sqlite"
) -> tuple[str, str | None]:
    """(why, profile path or None) for an unmet figure, with the split the run measured."""
    why = (WHY if backend == "sqlite" else WHY_PG).get(key, "not analysed")
    schema = baseline.get("into_product_schema") if isinstance(baseline, dict) else None
    if schema:
        bare, own, ours = baseline["events_per_s"], schema["events_per_s"], value["events_per_s"]
        why += (
            " Measured here: the same rows bare into the ledger's events table (without their keys) "
            f"{own:,} ev/s, {own / bare:.3f} of "
            f"the plain table's {bare:,}; the ledger reaches {ours / own:.2f} of that."
        )
    if key in ("append_vs_peer", "singles_vs_peer"):
        ours, peer = value["events_per_s"], baseline["events_per_s"]
        why += f" Measured here: the ledger {ours:,} ev/s, the peer {peer:,}."
    if key == "append_flat":
        why += (
            f" Measured here: the ledger {baseline['events_per_s']:,} ev/s at {baseline['size']:,} events, "
            f"{value['events_per_s']:,} at {value['size']:,}; the same rows bare into a copy of the ledger "
            f"(into_product_schema) {baseline['schema_events_per_s']:,} and {value['schema_events_per_s']:,}."
        )
    return why, value.get("profile") if isinstance(value, dict) else None


# the same figures on PostgreSQL (bench/pg.py), from its schema (ledger/pg_migrations.py) and its profiles
WHY_PG: dict[str, str] = {
    "append_library": (
        "The bare reference appends heap rows to a table without any index. The ledger's events table "
        "keeps three B-trees (primary key seq, UNIQUE (stream, stream_version), "
        "events_stream_type_time) and the keys without order go to the recent levels of event_keys and "
        "check_works (ledger/keys.py), moved down every 25,000 events. Each batch also takes the append "
        "lock and reads the head, existing ids, citing papers and stream versions first, each a round "
        "trip; the profile shows most of the time waiting on the server inside SqlWriteTx.insert. The "
        "same rows inserted bare into a copy of the ledger's events table (baseline.into_product_schema, "
        "without their keys) bound the events table alone."
    ),
    "append_http": (
        "Everything of the library append on PostgreSQL (see append_library), plus what the API does "
        "before it in the server's one process (body parsing and checks, as on SQLite)."
    ),
    "http_singles": (
        "Each acknowledged append waits for its group's COMMIT (a WAL flush at synchronous_commit=on); "
        "the group's transaction takes the append lock, then every batch in it makes its own reads "
        "(existing ids, citing papers, stream versions: round trips to the server) before the rows and "
        "keys go in; the server's one Python process does this on top of the HTTP work the no-op route "
        "does. The profile shows the group-commit writer waiting on the server."
    ),
    "library_singles": (
        "Group commit shares each WAL flush among the waiting callers, but each group's transaction "
        "takes the append lock and makes per-batch reads (round trips) before inserting the rows and "
        "their keys; the bare one-row transaction into the ledger's own database "
        "(baseline.into_product_schema) shows what the schema alone costs. The profile shows the writer "
        "thread waiting on the server."
    ),
    "verify": (
        "verify joins each body from the stored columns and links it with blake3 as the bare chain "
        "does, over rows read from the server in 5000-row pages, then also parses two instants, hashes "
        "a Merkle leaf and its nodes and compares every derived row (keys and per-work check rows, "
        "paged from both levels) with the event's data; the profile shows the split."
    ),
    "get_record": (
        "The route answers from its record cache, keyed by the head, so every request first reads the "
        "head from the server: a round trip, made in the thread pool (api/routes.py record_json, "
        "store.local is False) so that the event loop is not held. The static reference makes no round "
        "trip at all. The profile shows PostgresStore.head and the hand-offs to and from the pool "
        "(Condition.wait) under the route; a head pushed to each node (LISTEN/NOTIFY) instead of read "
        "per request would remove the round trip."
    ),
    "append_vs_peer": (
        "eventsourcing's PostgresApplicationRecorder.insert_events sends, pipelined in one transaction, "
        "LOCK TABLE ... IN EXCLUSIVE MODE, NOTIFY and one INSERT ... SELECT FROM unnest(%s) RETURNING "
        "notification_id carrying the whole batch as one array parameter of four values an event, into "
        "a heap with two B-trees (primary key (originator_id, originator_version), unique "
        "notification_id). Ledger.append takes its lock too, but reads the head, existing ids, citing "
        "papers and stream versions first (round trips) and writes 12 columns into three B-trees plus "
        "the two-level keys (see append_library)."
    ),
    "singles_vs_peer": (
        "The peer's single event is one pipelined transaction (lock, NOTIFY, INSERT, COMMIT: one WAL "
        "flush at synchronous_commit=on) from one caller. The ledger's group commit shares each flush "
        "among the waiting callers, but each group's transaction makes its per-batch round trips and "
        "writes rows and keys (see library_singles)."
    ),
    "append_flat": (
        "The bigger key levels grow with the ledger: each move (every 25,000 and 250,000 events) writes "
        "their leaf pages, and each batch's lookups probe them, outside shared_buffers as they grow."
    ),
}
